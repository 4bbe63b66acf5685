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

from onedoor_transport_slim.client import open_channel
from onedoor_transport_slim.errors import SlimTransportError

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


def start_tls_node(cluster, files: dict[str, str]) -> str:
    """A TLS node on a free port. The node cannot bind port 0 and report it, so a port is
    picked first; if another process takes it meanwhile, the node exits and another is tried."""
    for attempt in range(5):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        endpoint = f"https://127.0.0.1:{port}"
        node = Proc(
            cli("slim-node", "--endpoint", endpoint, "-o", f"tls_cert_file={files['node.pem']}",
                "-o", f"tls_key_file={files['node.key']}"),
            cluster.root / f"tls-node-{attempt}.err",
        )
        cluster.procs.append(node)
        try:
            node.wait_for("listening on", timeout=30)
            return endpoint
        except AssertionError:
            if node.popen.poll() is None:  # alive but silent: not a port clash
                raise
    raise AssertionError("no TLS node could bind a port in 5 attempts")


async def test_https_node_trust(cluster):
    files = make_certificates(cluster.root)
    cluster.endpoint = start_tls_node(cluster, files)
    with pytest.raises(SlimTransportError, match="untrusted certificate"):
        async with open_channel(options=cluster.options()):
            pass
    cluster.worker("echo", "-o", f"tls_ca_file={files['ca.pem']}")
    async with open_channel(options=cluster.options(tls_ca_file=files["ca.pem"])) as channel:
        await channel.send("over tls")
        assert await asyncio.wait_for(channel.recv(), 20) == "echo:over tls"
