"""Captures the directory index pages in this folder from the Debian servers
(nginx-light, apache2, lighttpd, caddy, python3's http.server) serving one
tree on 127.0.0.1: python3 capture.py OUTDIR. Each server is started on a free
port, asked for /lake/ once, and stopped by its process id. The pages are kept
as the servers sent them; the unit tests (web_index_test.cc) parse them."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

NAMES = ["README.md", "a b+c.b2nd", "\u00fcn\u00ef.b2nd", "100%.txt", "x&y<z>.csv", "quote'd.b2frame",
         "a-name-longer-than-fifty-characters-that-nginx-cuts-in-text.b2nd", "#hash.b2", "q?.b2"]
DIRS = ["held", "sparse.b2nd", "store.b2d"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_tree(root):
    lake = os.path.join(root, "lake")
    os.makedirs(lake)
    for name in NAMES:
        with open(os.path.join(lake, name), "w") as f:
            f.write(name)
    for name in DIRS:
        os.makedirs(os.path.join(lake, name))
        with open(os.path.join(lake, name, "inner"), "w") as f:
            f.write("inner")
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)


def fetch(url, headers=None):
    for _ in range(100):
        try:
            request = urllib.request.Request(url, headers=headers or {})
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.read(), answer.headers.get("Content-Type", "")
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no answer from {url}")


def run(args, cwd=None):
    return subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def nginx_conf(work, root, port, extra):
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""master_process off; daemon off; pid {work}/nginx.pid; error_log {work}/error.log;
events {{ worker_connections 64; }}
http {{ access_log off; client_body_temp_path {work}/b; proxy_temp_path {work}/p; fastcgi_temp_path {work}/f;
  uwsgi_temp_path {work}/u; scgi_temp_path {work}/s;
  server {{ listen 127.0.0.1:{port}; root {root}; autoindex on; {extra} }} }}
""")
    return ["nginx", "-c", conf, "-p", work]


def apache_conf(work, root, port, options):
    conf = os.path.join(work, "apache2.conf")
    modules = "/usr/lib/apache2/modules"
    with open(conf, "w") as f:
        f.write(f"""ServerRoot {work}
PidFile {work}/apache2.pid
ErrorLog {work}/error.log
Listen 127.0.0.1:{port}
ServerName 127.0.0.1
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule mime_module {modules}/mod_mime.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule autoindex_module {modules}/mod_autoindex.so
LoadModule alias_module {modules}/mod_alias.so
TypesConfig /etc/mime.types
DocumentRoot {root}
Alias /icons/ /usr/share/apache2/icons/
<Directory {root}>
  Options +Indexes
  Require all granted
  IndexOptions {options}
</Directory>
AddIcon /icons/folder.gif ^^DIRECTORY^^
AddIcon /icons/back.gif ..
DefaultIcon /icons/unknown.gif
""")
    return ["apache2", "-f", conf, "-DFOREGROUND"]


def lighttpd_conf(work, root, port):
    conf = os.path.join(work, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write(f"""server.document-root = "{root}"
server.bind = "127.0.0.1"
server.port = {port}
server.modules = ("mod_dirlisting")
dir-listing.activate = "enable"
dir-listing.encoding = "utf-8"
""")
    return ["lighttpd", "-D", "-f", conf]


def caddy_conf(work, root, port):
    conf = os.path.join(work, "Caddyfile")
    with open(conf, "w") as f:
        f.write(f"""{{
  admin off
  auto_https off
  storage file_system {work}/storage
}}
http://127.0.0.1:{port} {{
  root * {root}
  file_server browse
}}
""")
    return ["caddy", "run", "--config", conf, "--adapter", "caddyfile"]


def main():
    out = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        make_tree(root)
        servers = [
            ("nginx.html", nginx_conf, [""], None),
            ("nginx.json", nginx_conf, ["autoindex_format json;"], None),
            ("apache-table.html", apache_conf, ["FancyIndexing HTMLTable"], None),
            ("apache-pre.html", apache_conf, ["FancyIndexing"], None),
            ("apache-list.html", apache_conf, [""], None),
            ("lighttpd.html", lighttpd_conf, [], None),
            ("caddy.html", caddy_conf, [], None),
            ("caddy.json", caddy_conf, [], {"Accept": "application/json"}),
            ("python-http-server.html", None, [], None),
        ]
        for name, conf, extra, headers in servers:
            work = os.path.join(tmp, name)
            os.makedirs(work)
            port = free_port()
            args = conf(work, root, port, *extra) if conf else [
                sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", root]
            env_home = dict(os.environ, HOME=work, XDG_DATA_HOME=work, XDG_CONFIG_HOME=work)
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work,
                                    stdin=subprocess.DEVNULL, start_new_session=True, env=env_home)
            try:
                body, content_type = fetch(f"http://127.0.0.1:{port}/lake/", headers)
            finally:
                stop(proc)
            with open(os.path.join(out, name), "wb") as f:
                f.write(body)
            print(f"{name}: {len(body)} bytes, {content_type}")


if __name__ == "__main__":
    main()
