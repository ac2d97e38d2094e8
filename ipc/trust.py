"""Who said what: Ed25519 signatures on inbox entries, and the check every reader makes.

Any agent's tools can write any file its uid can, so the ``from`` of an inbox entry proves
nothing. Every member of our teams has a key pair: a teammate's is made by the supervisor at
each start and handed to the process through an inherited pipe (never argv, the environment
or a file); the lead's is made with the team and kept in the team's private runtime
directory (which no agent's tools may touch, :mod:`agentproc.permissions`). Public keys are in the config (``verifyKey`` of
each member; ``knownKeys`` keeps those of earlier incarnations and removed members, so
what they wrote still verifies).

One scheme, Claude Code 2.1.330's for its lead: an Ed25519 signature, base64url, over the
compact JSON array ``[TAG, msg_id, from, timestamp, text, summary|null, color|null,
from_plugin|null]``. Entries from ``team-lead`` carry it as ``lead_sig`` with Claude Code's
tag (so ``claude --lead-verify-key`` teammates verify ours); everyone else's as ``sig`` with
our own tag. A key is written as Claude Code writes ``--lead-verify-key``:
``{epoch_ms}.{base64url DER SubjectPublicKeyInfo}``; an entry stamped more than two minutes
before its key's epoch does not verify with it (Claude Code's rule: its lead stamps the key
with each teammate's launch).

A reader classes each entry :data:`VERIFIED`, :data:`UNVERIFIED` (the sender is no member
that signs: Claude Code 2.1.38, a peer tool; or the entry says it was written by a person
in a member's name, ``via: "person"``, which a person's door sets when it cannot sign) or
:data:`FORGED` (it claims a sender that signs, and the signature is missing, wrong, or a
``msg_id`` seen before). Unverified entries are shown marked, and never acted on as commands
but for what a member that cannot sign says of itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ipc import ed25519
from ipc.ed25519 import b64url, parse_public, unb64url
from ipc.ed25519 import key_bytes as key_bytes
from ipc.ed25519 import key_from_bytes as key_from_bytes
from ipc.ed25519 import new_key as new_key
from ipc.ed25519 import public_text as public_text
from ipc.errors import AgentTeamsError
from ipc.paths import TeamPaths
from ipc.refusals import Refusal as Refusal
from ipc.refusals import read_refusals as read_refusals
from ipc.refusals import record_refusal as record_refusal
from ipc.refusals import refusal_notice as refusal_notice
from ipc.schemas import (
    LEAD_NAME,
    IdleNotification,
    InboxMessage,
    ModeSetRequest,
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ProtocolBody,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
    TaskAssignment,
    TeamConfig,
    TeamPermissionUpdate,
    parse_body,
)
from ipc.seen_ids import SeenIds
from ipc.storage import FileKey, atomic_write, file_key, read_bytes

log = logging.getLogger("agentteams.trust")

LEAD_TAG = "claude-team-lead-entry-v1"  # Claude Code 2.1.330's, for team-lead's entries
MEMBER_TAG = "agentteams-entry-v1"  # the same scheme, for every other member's
# Set in every agent process but the lead's, and so inherited by its tools: code running
# under an agent never reads the lead's key file (a heuristic: a tool could unset it).
UNDER_AGENT_ENV = "AGENTTEAMS_UNDER_AGENT"
MAX_SEEN = 10_000  # msg_ids a reader remembers having taken (160 KB): the supervisor reads for as long as the team runs
EPOCH_SLACK_MS = 120_000  # as Claude Code: an entry up to 2 minutes older than the key's epoch

Status = Literal["verified", "unverified", "forged"]
VERIFIED: Status = "verified"
UNVERIFIED: Status = "unverified"
FORGED: Status = "forged"


# ---------------------------------------------------------------- the scheme


def _opt(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def payload(message: InboxMessage) -> bytes:
    """The bytes signed for ``message`` (JSON.stringify of Claude Code's array)."""
    tag = LEAD_TAG if message.from_ == LEAD_NAME else MEMBER_TAG
    fields = [tag, _opt(message.msg_id), message.from_, message.timestamp, message.text]
    return msgspec.json.encode(
        fields + [_opt(message.summary), _opt(message.color), _opt(message.from_plugin)]
    )


def sign(message: InboxMessage, key: Ed25519PrivateKey) -> InboxMessage:
    """Set the entry's signature (``lead_sig`` for team-lead, ``sig`` for others)."""
    signature = b64url(ed25519.sign(key, payload(message)))
    if message.from_ == LEAD_NAME:
        message.lead_sig = signature
    else:
        message.sig = signature
    return message


def signature_of(message: InboxMessage) -> str | None:
    return _opt(message.lead_sig if message.from_ == LEAD_NAME else message.sig)


def _epoch_of(timestamp: str) -> int | None:
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def signed_by(message: InboxMessage, keys: Iterable[str]) -> bool:
    """True if the entry's signature verifies with one of ``keys`` whose epoch it is not before."""
    signature = signature_of(message)
    if signature is None or not isinstance(message.msg_id, str):
        return False
    try:
        raw = unb64url(signature)
    except ValueError:
        return False
    stamped = _epoch_of(message.timestamp)
    data = payload(message)
    for text in keys:
        parsed = parse_public(text)
        if parsed is None or stamped is None or stamped < parsed[0] - EPOCH_SLACK_MS:
            continue
        if ed25519.verify(parsed[1], parsed[2], raw, data):
            return True
    return False


# ---------------------------------------------------------------- who holds which key


class Keyring:
    """The private keys this process signs with: its own member's (handed to it), and the
    lead's (read from ``keys/`` by lead-side processes; never by an agent of the team)."""

    def __init__(self) -> None:
        self._keys: dict[tuple[str, str], Ed25519PrivateKey] = {}
        self._installed: set[tuple[str, str]] = set()  # given to this process, not read from a file
        self._lead_files: dict[tuple[str, str], tuple[FileKey | None, Ed25519PrivateKey | None]] = {}
        self._lead_paths: dict[tuple[Path, str, str | None], Path] = {}
        self.lead_file_allowed = UNDER_AGENT_ENV not in os.environ
        # Makes the lead's key pair when a lead-side process first writes as the lead (set
        # by ipc.config, which knows the team's config).
        self.make_lead: Callable[[TeamPaths], None] | None = None

    def install(self, paths: TeamPaths, name: str, key: Ed25519PrivateKey) -> None:
        self._keys[(_team_of(paths), name)] = key
        self._installed.add((_team_of(paths), name))

    def agent_process(self, paths: TeamPaths, name: str, key: Ed25519PrivateKey | None) -> None:
        """This process is the agent ``name``: it signs as itself only, and never reads the
        lead's key file (its own code never speaks for the lead)."""
        self.lead_file_allowed = name == LEAD_NAME
        if not self.lead_file_allowed:
            os.environ[UNDER_AGENT_ENV] = name  # its tools inherit it
        self._keys.clear()
        self._installed.clear()
        self._lead_files.clear()
        if key is not None:
            self.install(paths, name, key)

    def key_for(self, paths: TeamPaths, sender: str) -> Ed25519PrivateKey | None:
        slot = (_team_of(paths), sender)
        if sender != LEAD_NAME or slot in self._installed:
            return self._keys.get(slot)
        if not self.lead_file_allowed:
            return None
        # The lead's key file, read again whenever it changed (a team made anew, a key
        # made again after the runtime directory was cleared).
        where = (paths.root, paths.team, os.environ.get("XDG_RUNTIME_DIR"))
        path = self._lead_paths.get(where)
        if path is None:  # worked out once: hashing the runtime path is dear on every send
            path = self._lead_paths[where] = lead_key_path(paths)
        identity = file_key(path)
        cached = self._lead_files.get(slot)
        if cached is not None and cached[0] == identity:
            return cached[1]
        data = read_bytes(path) if identity is not None else None
        key = key_from_bytes(data) if data is not None and len(data) == 32 else None
        self._lead_files[slot] = (identity, key)
        return key

    def forget(self, paths: TeamPaths) -> None:
        """Read the lead's key file of ``paths`` again at the next need."""
        for slot in [s for s in self._lead_files if s[0] == _team_of(paths)]:
            del self._lead_files[slot]


keyring = Keyring()


def _team_of(paths: TeamPaths) -> str:
    return f"{paths.root}\0{paths.team}"  # one team (its directory), without building a Path


def sign_as(paths: TeamPaths, message: InboxMessage) -> InboxMessage:
    """Sign ``message`` if this process holds its sender's key (the lead's made first, on a
    lead-side process's first write as the lead); else leave it unsigned."""
    key = keyring.key_for(paths, message.from_)
    if key is None and message.from_ == LEAD_NAME and keyring.lead_file_allowed and keyring.make_lead:
        try:
            keyring.make_lead(paths)
        except AgentTeamsError as exc:  # no key: the entry goes unsigned, and readers say so
            log.warning("no lead key for %s: %s", paths.team, exc.message)
        key = keyring.key_for(paths, message.from_)
    return sign(message, key) if key is not None else message


def lead_key_path(paths: TeamPaths) -> Path:
    """In the team's private runtime directory, away from any project an agent works in."""
    return paths.runtime_path() / "keys" / f"{LEAD_NAME}.key"


def lead_public(paths: TeamPaths) -> str | None:
    """The public half of this host's lead key file, stamped with the file's time."""
    path = lead_key_path(paths)
    data = read_bytes(path)
    if data is None or len(data) != 32:
        return None
    return public_text(key_from_bytes(data), int(path.stat().st_mtime * 1000))


def make_lead_key(paths: TeamPaths) -> str:
    """Make the lead's key pair for a team of ours (replacing any); its public key, to be
    written as the lead member's ``verifyKey``."""
    key = new_key()
    paths.runtime_dir()  # created 0700, and refused if it is not safely ours
    atomic_write(lead_key_path(paths), key_bytes(key))
    keyring.forget(paths)
    return public_text(key)


# ---------------------------------------------------------------- reading


def keys_of(config: TeamConfig, name: str) -> tuple[list[str], bool]:
    """(public keys an entry from ``name`` may verify with, whether ``name`` signs)."""
    member = config.member(name)
    retired = config.known_keys.get(name, []) if isinstance(config.known_keys, dict) else []
    current = member.verify_key if member is not None and isinstance(member.verify_key, str) else None
    if member is not None and current is None:
        return [], False  # a member that cannot sign (a claude teammate, an outside tool)
    keys = ([current] if current else []) + [k for k in retired if isinstance(k, str)]
    return keys, bool(keys)


@dataclass(frozen=True)
class Check:
    status: Status
    reason: str = ""
    member: bool = True  # the claimed sender is the lead or a member (or was one)
    person: bool = False  # written unsigned by a person in the sender's name


class ConfigSource(Protocol):
    """The team's config as a reader sees it (a TeamConfigStore: read() is cached by the
    file's identity, so a check per message costs a stat)."""

    paths: TeamPaths

    def read(self) -> TeamConfig: ...


class Verifier:
    """One reader's view: who signs, what verifies, which ``msg_id`` it has taken before."""

    def __init__(
        self,
        config: ConfigSource,
        reader: str,
        seen: Iterable[str] = (),
        lead_keys: Callable[[], list[str]] = list,
    ) -> None:
        self.config = config
        self.paths: TeamPaths = config.paths
        self.reader = reader
        self.seen = SeenIds(MAX_SEEN, seen)
        # Keys the lead's entries verify with when the config names none (Claude Code's
        # lead): looked up when the first such entry is checked, as finding them may cost
        self._find_lead_keys = lead_keys
        self._lead_keys: list[str] | None = None

    def check(self, message: InboxMessage) -> Check:
        try:
            config = self.config.read()
            keys, signs = keys_of(config, message.from_)
            if not signs and message.from_ == LEAD_NAME:
                if self._lead_keys is None:
                    self._lead_keys = self._find_lead_keys()
                keys, signs = self._lead_keys, bool(self._lead_keys)
        except AgentTeamsError as exc:  # an unreadable config: nothing verifies, nothing is trusted
            return Check(UNVERIFIED, f"config unreadable: {exc.message}", member=False)
        if not signs:
            member = config.member(message.from_) is not None
            if signature_of(message) is not None and message.from_ == LEAD_NAME:
                return Check(UNVERIFIED, "signed, but the team has no lead key to check it with", member)
            return Check(UNVERIFIED, f"{message.from_} does not sign", member)
        if signature_of(message) is None and message.via == "person":
            return Check(UNVERIFIED, f"written by a person in {message.from_}'s name", person=True)
        if signature_of(message) is None:
            return Check(FORGED, f"unsigned, but {message.from_} signs everything it writes")
        if not signed_by(message, keys):
            return Check(FORGED, f"the signature is not {message.from_}'s")
        if message.msg_id in self.seen:
            return Check(FORGED, f"msg_id {message.msg_id} was delivered before (a replay)")
        return Check(VERIFIED)

    def stands(self, message: InboxMessage, body: ProtocolBody | None) -> bool:
        """Whether this reader may act on ``message`` (``body``: its parsed text): no
        :func:`refusal` for it. A look: nothing recorded, nothing taken."""
        return refusal(message, body, self.check(message), self.reader) is None

    def verdict(self, message: InboxMessage) -> Check:
        """What a look at this reader's inbox shows of ``message``: FORGED, with the reason,
        for anything the reader would refuse (:func:`refusal`), else its check. Nothing is
        recorded; a verified ``msg_id`` is remembered, so the same id again in the same
        look is a replay."""
        check = self.check(message)
        reason = refusal(message, parse_body(message.text), check, self.reader)
        if reason is not None:
            return Check(FORGED, reason, check.member, check.person)
        if check.status == VERIFIED:
            self.taken(message)
        return check

    def taken(self, message: InboxMessage) -> None:
        """Remember a delivered entry's ``msg_id``: the same id again is a replay."""
        if isinstance(message.msg_id, str):
            self.seen.add(message.msg_id)


def refusal(message: InboxMessage, body: ProtocolBody | None, check: Check, reader: str) -> str | None:
    """Why ``message``, read from ``reader``'s inbox, must not be acted on or shown as
    genuine, or None. Forged: never. Commands (shutdown request, plan and permission
    answers, mode and permission changes) only from the lead, and only by the teammate they
    name; answers, reports and requests only about their own sender. Unverified (a sender
    that cannot sign) passes, marked as such where it is shown."""
    if check.status == FORGED:
        return check.reason
    sender = message.from_
    if body is not None and not check.member:
        return f"a {_kind(body)} from {sender}, who is not a member of the team"
    if body is not None and check.person:
        return f"a {_kind(body)} written by a person in {sender}'s name is not acted on"
    commands = (
        ShutdownRequest | PlanApprovalResponse | PermissionResponse | ModeSetRequest | TeamPermissionUpdate
    )
    if isinstance(body, commands) and sender != LEAD_NAME:
        return f"a {_kind(body)} may come only from {LEAD_NAME}, not {sender}"
    # The signature does not name the recipient (Claude Code's scheme): a genuine command
    # copied into another inbox verifies there, so the command must name its reader.
    addressee = _addressee(body)
    if addressee is not None and addressee != reader:
        named = f"is for {addressee}" if addressee else "names no teammate"
        return f"a {_kind(body)} that {named} is not acted on by {reader}"
    about = _about(body)
    if about is not None and about != sender:
        return f"a {_kind(body)} about {about} cannot come from {sender}"
    return None


def _addressee(body: ProtocolBody | None) -> str | None:
    """The teammate a command is for ("" if it names none), or None where its answer is
    matched to a request of the reader's own (plan and permission answers)."""
    if isinstance(body, ShutdownRequest):  # shutdown-{ms}@{name}, as Claude Code writes it
        return body.request_id.rpartition("@")[2] if "@" in body.request_id else None
    if isinstance(body, ModeSetRequest | TeamPermissionUpdate):
        return body.target if isinstance(body.target, str) else ""
    return None


def _kind(body: ProtocolBody | None) -> str:
    return type(body).__name__


def _about(body: ProtocolBody | None) -> str | None:
    """The member a report or answer speaks for, which must be its sender."""
    if isinstance(body, IdleNotification | ShutdownApproved | ShutdownRejected | PlanApprovalRequest):
        return body.from_
    if isinstance(body, PermissionRequest):
        return body.agent_id.split("@")[0]
    if isinstance(body, TaskAssignment):
        return body.assigned_by
    return None


def read_ids(messages: Iterable[InboxMessage]) -> list[str]:
    """The ``msg_id`` of every read entry: a reader's memory across its restarts."""
    return [m.msg_id for m in messages if m.read and isinstance(m.msg_id, str)]
