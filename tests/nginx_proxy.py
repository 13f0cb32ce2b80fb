"""The nginx configuration of docs/deploy.md, run for real: shared by
``tests/test_deploy_nginx.py`` and ``benchmarks/bench_capacity.py``.

``docs/nginx-medsim.conf`` is the file docs/deploy.md shows (a test keeps the two identical).
:func:`render` changes only what a test machine must: the two app servers' ports, the
listening addresses (loopback, free ports) and the certificate paths (a self-signed
certificate made here). Each change must match the file exactly as often as expected, so a
reworded config fails loudly instead of running untested. :class:`Nginx` wraps the result in
a minimal main configuration (pid, logs and temp paths in a temporary folder, the
``http { include ...; }`` Debian's nginx.conf provides) and runs Debian's nginx with it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import time
from pathlib import Path

from tests.ports import free_port, owns_port

ROOT = Path(__file__).resolve().parents[1]
NGINX = Path("/usr/sbin/nginx")
CONF = ROOT / "docs" / "nginx-medsim.conf"
DEPLOY_DOC = ROOT / "docs" / "deploy.md"


def doc_block() -> str:
    """The ```nginx block of docs/deploy.md that shows docs/nginx-medsim.conf."""
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```nginx\n(.*?)```", text, flags=re.S)
    shown = [b for b in blocks if "upstream medsim_api" in b]
    if len(shown) != 1:
        raise AssertionError(f"docs/deploy.md shows the nginx config {len(shown)} times, not 1")
    return shown[0]


def _swap(text: str, old: str, new: str, count: int) -> str:
    found = text.count(old)
    if found != count:
        raise AssertionError(f"{CONF.name}: {old!r} occurs {found} times, expected {count}")
    return text.replace(old, new)


def render(
    app_ports: tuple[int, int], https_port: int, http_port: int, cert: Path, key: Path
) -> str:
    """docs/nginx-medsim.conf with the ports and certificate paths of this machine."""
    text = CONF.read_text(encoding="utf-8")
    text = _swap(text, "server 127.0.0.1:8501", f"server 127.0.0.1:{app_ports[0]}", 2)
    text = _swap(text, "server 127.0.0.1:8502", f"server 127.0.0.1:{app_ports[1]}", 2)
    text = _swap(text, "listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl", 1)
    text = _swap(text, "listen 80;", f"listen 127.0.0.1:{http_port};", 1)
    text = _swap(text, "/etc/ssl/medsim/fullchain.pem", str(cert), 1)
    return _swap(text, "/etc/ssl/medsim/privkey.pem", str(key), 1)


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A throw-away certificate for 127.0.0.1 (cert, key), valid one day."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def served_by_doctor(log_text: str) -> dict[str, list[str]]:
    """Doctor (the ``X-Load-Doctor`` header of tests/load.py) -> the app server that answered
    each of its ratings requests, in order, from lines of :class:`Nginx`'s access log
    (method, path, status, doctor, upstream). After a failed attempt nginx lists both
    upstreams; the last one answered."""
    out: dict[str, list[str]] = {}
    for line in log_text.splitlines():
        parts = line.split(" ", 4)
        if len(parts) == 5 and parts[1].startswith("/api/") and parts[2] == "200":
            out.setdefault(parts[3], []).append(parts[4].rsplit(" ", 1)[-1])
    return out


class Nginx:
    """Debian's nginx serving :func:`render`'s config from a temporary folder (no root
    needed; as root, its workers stay root so they can read the folder)."""

    def __init__(self, folder: Path, app_ports: tuple[int, int], *, workers: int = 1) -> None:
        if any(c.isspace() or c in "'\";{}" for c in str(folder)):
            raise ValueError(f"nginx paths cannot hold spaces or quotes: {folder}")
        self.folder = folder
        self.app_ports = app_ports
        folder.mkdir(parents=True, exist_ok=True)
        self.cert, self.key = self_signed(folder)
        self._listen_on_free_ports()
        temps = "\n".join(
            f"    {kind}_temp_path {folder / kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        user = "user root root;\n" if os.geteuid() == 0 else ""
        (folder / "nginx.conf").write_text(
            f"{user}worker_processes {workers};\n"
            f"pid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'} warn;\n"
            "events { worker_connections 4096; }\n"
            "http {\n"
            # which app server answered each request, and for which simulated doctor
            # (tests/load.py sends X-Load-Doctor): the tests check both servers did
            "    log_format upstreams '$request_method $uri $status $http_x_load_doctor "
            "$upstream_addr';\n"
            f"    access_log {folder / 'upstreams.log'} upstreams;\n"
            f"{temps}\n"
            f"    include {folder / 'medsim.conf'};\n"
            "}\n",
            encoding="utf-8",
        )
        self.proc: subprocess.Popen | None = None

    def _listen_on_free_ports(self) -> None:
        self.https_port, self.http_port = free_port(), free_port()
        (self.folder / "medsim.conf").write_text(
            render(self.app_ports, self.https_port, self.http_port, self.cert, self.key),
            encoding="utf-8",
        )
        self.base = f"https://127.0.0.1:{self.https_port}"

    def _cmd(self, *extra: str) -> list[str]:
        return [
            str(NGINX),
            "-p",
            str(self.folder),
            "-c",
            str(self.folder / "nginx.conf"),
            "-e",
            str(self.folder / "error.log"),
            *extra,
        ]

    def check(self) -> subprocess.CompletedProcess:
        """``nginx -t`` of the configuration."""
        return subprocess.run(self._cmd("-t"), capture_output=True, text=True, timeout=30)

    def start(self, timeout: float = 20) -> Nginx:
        """Start nginx; ready once its own master holds the HTTPS port (a port picked as free
        may have been taken by another worker's server: then new ports are picked)."""
        for _ in range(5):
            if self._start_once(timeout):
                return self
            self._listen_on_free_ports()
        raise RuntimeError("nginx could not get free ports (other servers took them)")

    def _start_once(self, timeout: float) -> bool:
        self.proc = subprocess.Popen(
            self._cmd("-g", "daemon off;"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while True:
            if owns_port(self.proc.pid, self.https_port) and owns_port(
                self.proc.pid, self.http_port
            ):
                return True
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                log = (self.folder / "error.log").read_text(errors="replace")
                if "Address already in use" in log:
                    (self.folder / "error.log").write_text("")
                    return False
                raise RuntimeError(f"nginx did not start:\n{log}")
            time.sleep(0.1)

    def reload(self, app_ports: tuple[int, int]) -> None:
        """Point the config at *app_ports* (the same port twice: one app server) and reload
        nginx; its old workers finish the requests they hold (graceful)."""
        self.app_ports = app_ports
        (self.folder / "medsim.conf").write_text(
            render(app_ports, self.https_port, self.http_port, self.cert, self.key),
            encoding="utf-8",
        )
        done = subprocess.run(self._cmd("-s", "reload"), capture_output=True, text=True, timeout=30)
        if done.returncode:
            raise RuntimeError(f"nginx -s reload failed:\n{done.stderr}")

    def pids(self) -> list[int]:
        """The master and its workers (for CPU accounting)."""
        if self.proc is None:
            return []
        out = [self.proc.pid]
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                try:
                    stat = (p / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    out.append(int(p.name))
        return out

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()  # SIGTERM: nginx's fast shutdown
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
