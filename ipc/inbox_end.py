"""Where an inbox's array ends, found without reading the room before its bracket.

A rewrite of a long inbox leaves room (spaces) before the closing bracket for the appends
that follow, an eighth of the file: megabytes for a long pile of unread reports. The end of
the last element is found by stepping back over that room a page at a time, or by reading
onward from where this process found it last: a few pages at the room's ends are read,
never the whole of it.
"""

from __future__ import annotations

import os

from ipc.storage import PAGE

ELEMENT_END = b"\n  }"  # what closes an element of the array (two spaces: at no other depth)
ELEMENT_END_LEN = len(ELEMENT_END)
COPY_CHUNK = 1 << 18
ONWARD_PAGES = 2  # read onward from where a look last found the end, before stepping back

BLANK = b" \t\r\n"  # JSON's whitespace


def rstrip_blank(data: bytes, blank: bytes = BLANK) -> bytes:
    """``data.rstrip(blank)``, a page of spaces at a fifth of the cost: ``rstrip`` with a set
    tests each byte against it, the built-in ``rstrip()`` (ASCII whitespace) does not. The
    exact strip runs only where that took a byte outside ``blank`` (``\x0b``, ``\x0c``).
    Exact for any ``blank`` made of ASCII whitespace, as every caller's is."""
    cut = data.rstrip()
    if len(cut) < len(data) and data[len(cut) :].translate(None, blank):
        return data.rstrip(blank)
    return cut


def is_blank(data: bytes, blank: bytes = BLANK) -> bool:
    """``not data.strip(blank)``, as :func:`rstrip_blank` does it."""
    return not data.strip() and not data.translate(None, blank)


def solid_end(fd: int, below: int, blank: bytes = BLANK) -> tuple[int, bool, bytes]:
    """The offset just past the last byte before ``below`` of the file open at ``fd`` that is
    not in ``blank`` (0 if there is none), whether every byte between was read (rather
    than a whole page of blanks taken to be followed by more blanks), and that byte (empty
    if there is none): the caller looking for a bracket need not read it again.

    Whitespace is stepped over a page at a time, galloping then halving: the room a rewrite
    leaves before the bracket (an eighth of the file, megabytes for a long pile of unread
    reports) costs a few reads of a page, not its length."""
    if below <= 0:
        return 0, True, b""
    page = (below - 1) // PAGE * PAGE
    tail = rstrip_blank(os.pread(fd, below - page, page), blank)
    if tail:
        return page + len(tail), True, tail[-1:]
    clear, step, solid = page, PAGE, -1  # pages from `clear` up hold only blanks
    while clear > 0:
        probe = max(0, clear - step)
        if not is_blank(os.pread(fd, PAGE, probe), blank):
            solid = probe
            break
        clear, step = probe, step * 2
    if solid < 0:
        return 0, False, b""
    while clear - solid > PAGE:  # the page at `solid` holds more than blanks; the one at `clear` not
        middle = (solid + clear) // 2 // PAGE * PAGE
        if not is_blank(os.pread(fd, PAGE, middle), blank):
            solid = middle
        else:
            clear = middle
    last = rstrip_blank(os.pread(fd, PAGE, solid), blank)
    return solid + len(last), solid + PAGE == page, last[-1:]


def _solid_end_read(fd: int, below: int) -> int:
    """:func:`solid_end` reading every byte: from ``below`` back, a chunk at a time."""
    while below > 0:
        start = max(0, below - COPY_CHUNK)
        piece = rstrip_blank(os.pread(fd, below - start, start))
        if piece:
            return start + len(piece)
        below = start
    return 0


def _bracket_before(fd: int, close: int) -> bool:
    """Whether the byte just before offset ``close`` is a closing bracket."""
    return close > 0 and os.pread(fd, 1, close - 1) == b"]"


def _end_onward(fd: int, start: int, bracket: int) -> int | None:
    """The array's content end found forward from ``start`` (where a look of this process
    found it before), reading the rest of that page and :data:`ONWARD_PAGES` more: the offset
    just past the last byte that is not a blank before the first whole page of blanks (the
    room), or before the ``bracket``; the bytes there must close an element. None where that
    cannot be seen so (more was appended since than the pages read, or ``start`` means
    nothing in this file: written over in place, or another file): the caller steps back from
    the bracket instead. So any ``start`` is safe; a stale one only costs the reads."""
    if not ELEMENT_END_LEN <= start <= bracket:
        return None
    first = (start // PAGE + 1) * PAGE  # the first whole page past ``start``
    limit = min(bracket, first + ONWARD_PAGES * PAGE)
    origin = start - ELEMENT_END_LEN  # read from there: the bytes that close the element too
    data = os.pread(fd, limit - origin, origin)
    end = -1
    for page in range(first - origin, limit - origin - PAGE + 1, PAGE):
        if is_blank(data[page : page + PAGE]):
            end = len(rstrip_blank(data[:page]))
            break
    if end < 0:
        if limit < bracket:
            return None  # content past what was read, or pages of spaces in a text
        end = len(rstrip_blank(data))
    closes = end >= ELEMENT_END_LEN and data[end - ELEMENT_END_LEN : end] == ELEMENT_END
    return origin + end if closes else None


def content_end(fd: int, size: int, after: int = 0) -> tuple[int, int] | None:
    """Where the array in the file open at ``fd`` (``size`` bytes) ends: the offset just past
    its last element (or its opening bracket) and that of its closing bracket; None if the
    file does not end with one (torn, being written, or not an array). ``after``: where this
    process last found it in this file (0: not known); the end is looked for onward from
    there first (:func:`_end_onward`), a read or two where stepping back over the room from
    the bracket takes a dozen.

    Stepping over whole pages of blanks takes them to lie only past the last element, as
    every writer of these files leaves them (our gaps are shorter than a page;
    ``JSON.stringify`` leaves none). A text holding a page of spaces breaks that: the end
    then found lies inside the text, where no element can be seen to close (a string holds
    no raw newline, so not after ``\\n  }``), and the file is read through instead."""
    # The bracket first, past the newlines each append into the room adds after it (up to
    # one per append since the last rewrite): stepping over whitespace there would go on
    # into the room and miss the bracket's page.
    close, sure, last = solid_end(fd, size, b"\n")
    if last != b"]":
        close, sure, last = solid_end(fd, size)  # other writers' blanks after the bracket
    if last != b"]":
        if sure:
            return None  # what ends the file is not a bracket
    else:
        onward = _end_onward(fd, after, close - 1) if after else None
        if onward is not None:
            return onward, close - 1
        end, sure_too, _ = solid_end(fd, close - 1)
        if (sure and sure_too) or os.pread(fd, ELEMENT_END_LEN, max(0, end - ELEMENT_END_LEN)) == ELEMENT_END:
            return end, close - 1
    close = _solid_end_read(fd, size)
    if not _bracket_before(fd, close):
        return None
    return _solid_end_read(fd, close - 1), close - 1
