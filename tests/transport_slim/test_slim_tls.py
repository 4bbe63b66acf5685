"""TLS to the node for https endpoints: an untrusted certificate fails in seconds with a
clear error; with the CA given, a worker and a client talk through the TLS node."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess

import pytest
from slim_harness import Proc, cli

pytest.importorskip("slim_bindings")

from onedoor_transport_slim.client import open_channel  # noqa: E402
from onedoor_transport_slim.runtime import SlimTransportError  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make test certificates")


def make_certificates(folder) -> dict[str, str]:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=onedoor-test-ca")
    run("req", *ec, "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=localhost")
    (folder / "ext.cnf").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    run("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "node.pem", "-days", "2", "-extfile", "ext.cnf")
    return {name: str(folder / name) for name in ("ca.pem", "node.pem", "node.key")}


async def test_https_node_trust(cluster):
    files = make_certificates(cluster.root)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"https://127.0.0.1:{port}"
    node = Proc(
        cli("slim-node", "--endpoint", endpoint, "-o", f"tls_cert_file={files['node.pem']}", "-o", f"tls_key_file={files['node.key']}"),
        cluster.root / "tls-node.err",
    )
    cluster.procs.append(node)
    node.wait_for("listening on", timeout=30)
    cluster.endpoint = endpoint
    with pytest.raises(SlimTransportError, match="untrusted certificate"):
        async with open_channel(options=cluster.options()):
            pass
    cluster.worker("echo", "-o", f"tls_ca_file={files['ca.pem']}")
    async with open_channel(options=cluster.options(tls_ca_file=files["ca.pem"])) as channel:
        await channel.send("over tls")
        assert await asyncio.wait_for(channel.recv(), 20) == "echo:over tls"
