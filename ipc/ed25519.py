"""Ed25519 keys in the text form Claude Code passes them in (``--lead-verify-key``), and
signing and verifying on the message path, through libsodium when PyNaCl is
installed (verify ~3x, sign ~2x faster than OpenSSL's, as cryptography calls it), else
through cryptography. The two give the same signatures (Ed25519 is deterministic) and each
checks the other's; keys stay cryptography's objects everywhere else.

Only PyNaCl's compiled module is imported (about a millisecond): its ``nacl.bindings``
package imports every binding it has, some 9 ms more on a command's start.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ipc.clock import now_ms

_lib: Any = None  # libsodium's functions, once loaded; False: not installed
_ffi: Any = None
_secret: dict[bytes, bytes] = {}  # 32-byte seed -> libsodium's 64-byte secret key (seed + public)


def _sodium() -> Any:
    """libsodium, or None when PyNaCl is not installed."""
    global _lib, _ffi
    if _lib is None:
        try:
            from nacl._sodium import ffi, lib  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            _lib = False
        else:
            _lib = lib if lib.sodium_init() >= 0 else False
            _ffi = ffi
    return _lib or None


def backend() -> str:
    return "libsodium" if _sodium() is not None else "openssl"


def sign(key: Ed25519PrivateKey, data: bytes) -> bytes:
    """The 64-byte signature of ``data``."""
    lib = _sodium()
    if lib is None:
        return key.sign(data)
    seed = key.private_bytes_raw()
    secret = _secret.get(seed)
    if secret is None:
        public = _ffi.new("unsigned char[]", 32)
        made = _ffi.new("unsigned char[]", 64)
        lib.crypto_sign_seed_keypair(public, made, seed)
        secret = bytes(_ffi.buffer(made, 64))
        if len(_secret) > 1024:
            _secret.clear()
        _secret[seed] = secret
    signed = _ffi.new("unsigned char[]", len(data) + 64)
    lib.crypto_sign(signed, _ffi.NULL, data, len(data), secret)
    return bytes(_ffi.buffer(signed, 64))


def verify(public: Ed25519PublicKey, raw_public: bytes, signature: bytes, data: bytes) -> bool:
    """True if ``signature`` is ``data`` signed by the key (``raw_public``: its 32 bytes)."""
    lib = _sodium()
    if lib is None:
        try:
            public.verify(signature, data)
            return True
        except InvalidSignature:
            return False
    if len(signature) != 64:
        return False
    out = _ffi.new("unsigned char[]", len(data) + 64)
    length = _ffi.new("unsigned long long *")
    return bool(lib.crypto_sign_open(out, length, signature + data, len(data) + 64, raw_public) == 0)


# ---------------------------------------------------------------- keys


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def key_bytes(key: Ed25519PrivateKey) -> bytes:
    """The 32 raw bytes of the private key (what a pipe or the lead's key file carries)."""
    return key.private_bytes_raw()


def key_from_bytes(data: bytes) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(data)


_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")  # every Ed25519 SPKI, then the key (RFC 8410)


def public_text(key: Ed25519PrivateKey, epoch_ms: int | None = None) -> str:
    """``{epoch_ms}.{base64url DER SPKI}``: Claude Code's ``--lead-verify-key`` form."""
    der = _SPKI_PREFIX + key.public_key().public_bytes_raw()
    return f"{now_ms() if epoch_ms is None else epoch_ms}.{b64url(der)}"


PUBLIC_CACHE = 256  # a parse is ~3 µs beside a ~100 µs check; each restart is a new key to keep
_public_cache: dict[str, tuple[int, Ed25519PublicKey, bytes] | None] = {}


def parse_public(text: str) -> tuple[int, Ed25519PublicKey, bytes] | None:
    """(epoch ms, key, its 32 bytes) of a key written by :func:`public_text`; None if it is not one."""
    if text in _public_cache:
        return _public_cache[text]
    parsed: tuple[int, Ed25519PublicKey, bytes] | None = None
    epoch, _, der = text.partition(".")
    try:
        spki = unb64url(der)
        if epoch.isdigit() and len(spki) == len(_SPKI_PREFIX) + 32 and spki.startswith(_SPKI_PREFIX):
            raw = spki[len(_SPKI_PREFIX) :]
            parsed = (int(epoch), Ed25519PublicKey.from_public_bytes(raw), raw)
    except (ValueError, TypeError):
        parsed = None
    if len(_public_cache) > PUBLIC_CACHE:
        _public_cache.clear()
    _public_cache[text] = parsed
    return parsed
