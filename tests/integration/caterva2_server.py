"""A real Caterva2 server (cat2-server from BUILD/venv-caterva2, which
scripts/caterva2-venv.sh makes) on 127.0.0.1 on a free port, with a state
directory of the test's making; stopped by process id on every path (the
test's atexit, a `with` block, and setpriv --pdeathsig when the test is killed)."""

import http.client
import json
import os
import subprocess
import urllib.parse

from remote_servers import START_PATIENCE, _http_status, _Server, _wait_for, free_ports


def caterva2_venv(build_dir):
    """BUILD/venv-caterva2's bin directory, or None when it was not made."""
    bin_dir = os.path.join(build_dir, "venv-caterva2", "bin")
    return bin_dir if os.path.exists(os.path.join(bin_dir, "cat2-server")) else None


def build_dir_of(binary):
    """The build directory of the blosc2fs binary (BUILD/src/fs/blosc2fs)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(binary))))


class Caterva2Server(_Server):
    """cat2-server serving `statedir` (public/, shared/, personal/<uid>/) at
    http://127.0.0.1:PORT. With `secret`, logins are on (CATERVA2_SECRET)."""

    def __init__(self, bin_dir, workdir, statedir, secret=None, port=None):
        self.bin_dir = bin_dir
        self.workdir = os.path.join(workdir, "caterva2")
        os.makedirs(self.workdir, exist_ok=True)
        self.statedir = os.path.abspath(statedir)
        for root in ("public", "shared", "personal"):
            os.makedirs(os.path.join(self.statedir, root), exist_ok=True)
        self.secret = secret
        self.port = port or free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.conf = os.path.join(self.workdir, f"caterva2-{self.port}.toml")
        with open(self.conf, "w") as f:
            f.write(f"""[server]
login = {"true" if secret else "false"}
register = false
listen = "127.0.0.1:{self.port}"
urlbase = "{self.url}"
""")
        self.log_path = os.path.join(self.workdir, f"server-{self.port}-{os.getpid()}-{id(self)}.log")
        env = dict(os.environ)
        env.pop("CATERVA2_SECRET", None)
        if secret:
            env["CATERVA2_SECRET"] = secret
        self.env = env
        self.log = open(self.log_path, "w")
        self._launch([os.path.join(bin_dir, "cat2-server"), f"--conf={self.conf}", f"--statedir={self.statedir}"],
                     self.log, cwd=self.workdir, env=env)
        try:
            _wait_for(lambda: self.proc.poll() is not None or _http_status(self.url + "/api/roots") == 200,
                      START_PATIENCE, "cat2-server")
            if self.proc.poll() is not None:
                raise RuntimeError(f"cat2-server exited with {self.proc.returncode}: {self.log_text()[-2000:]}")
        except Exception:
            self.stop()
            raise

    def log_text(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def requests_for(self, method, server_path):
        """How many `METHOD /...server_path` requests uvicorn's access log shows."""
        quoted = urllib.parse.quote(server_path, safe="/")
        needle = f'"{method} {quoted} HTTP/'
        return sum(1 for line in self.log_text().splitlines() if needle in line)

    def add_user(self, user, password):
        """cat2-admin adduser, against the server's state directory."""
        r = subprocess.run([os.path.join(self.bin_dir, "cat2-admin"), f"--conf={self.conf}",
                            f"--statedir={self.statedir}", "adduser", user, password],
                           capture_output=True, text=True, timeout=120, env=self.env, cwd=self.workdir,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError(f"cat2-admin adduser failed: {r.stderr.strip()[-2000:]}")

    def login_cookie(self, user, password):
        """The c2subauth cookie of a login (POST /auth/jwt/login)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            body = urllib.parse.urlencode({"username": user, "password": password})
            conn.request("POST", "/auth/jwt/login", body=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
            r = conn.getresponse()
            r.read()
            for name, value in r.getheaders():
                if name.lower() == "set-cookie" and value.startswith("c2subauth="):
                    return value.split(";")[0]
            raise RuntimeError(f"login of {user} got HTTP {r.status} and no cookie")
        finally:
            conn.close()

    def upload(self, cookie, server_path, local_file):
        """POST /api/upload/SERVER_PATH (multipart), logged in with `cookie`."""
        boundary = "blosc2fs-test-boundary-7d1f"
        with open(local_file, "rb") as f:
            data = f.read()
        name = os.path.basename(server_path)
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("POST", "/api/upload/" + server_path, body=body,
                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": cookie})
            r = conn.getresponse()
            text = r.read().decode(errors="replace")
            if r.status != 200:
                raise RuntimeError(f"upload of {server_path} got HTTP {r.status}: {text[:300]}")
            return json.loads(text) if text.startswith('"') else text
        finally:
            conn.close()

    def stop(self):
        super().stop()
        try:
            self.log.close()
        except Exception:
            pass
