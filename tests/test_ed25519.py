"""Signatures on the message path (ipc.ed25519): libsodium's and OpenSSL's agree byte for
byte, each checks the other's, and neither accepts what it should not."""

from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ipc import ed25519, trust


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes_raw()


def test_libsodium_is_used_when_pynacl_is_installed() -> None:
    assert ed25519.backend() == "libsodium"  # PyNaCl is a dependency: the fast path is the one run


@pytest.mark.parametrize("sodium", [True, False], ids=["libsodium", "openssl"])
def test_signatures_match_cryptographys_and_only_the_right_ones_verify(
    sodium: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not sodium:
        monkeypatch.setattr(ed25519, "_lib", False)
    key, other = trust.new_key(), trust.new_key()
    for size in (0, 1, 200, 5000):
        data = os.urandom(size)
        signature = ed25519.sign(key, data)
        assert signature == key.sign(data)  # Ed25519 is deterministic: the same bytes either way
        assert ed25519.verify(key.public_key(), _raw(key), key.sign(data), data)
        assert not ed25519.verify(other.public_key(), _raw(other), signature, data)
        assert not ed25519.verify(key.public_key(), _raw(key), signature, data + b"x")
        assert not ed25519.verify(key.public_key(), _raw(key), signature[:63], data)
        flipped = bytes([signature[0] ^ 1]) + signature[1:]
        assert not ed25519.verify(key.public_key(), _raw(key), flipped, data)
