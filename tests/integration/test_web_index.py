"""Web directory indexes as listings (issue 29): sparse frames and .b2d stores on
web servers mounted through the servers' own directory indexes (nginx's
autoindex in HTML and in JSON, lighttpd's mod_dirlisting, Apache's
mod_autoindex, Caddy's file_server browse), equal byte for byte
to their local mounts; the local collection test's folder behind nginx (HTML
and JSON) and Caddy mounts as that collection; python's http.server lists but answers no ranges, so its
datasets are refused with one line each; a server that gives no index is refused
with one line naming the cause; hostile indexes (links out of the place,
encoded slashes and dots, other hosts, loops, 2,000,000 entries, 65 MiB) never
make the daemon ask for anything outside the place: the servers' access logs
say every path it asked for. The servers run on 127.0.0.1 (remote_servers.py)."""

import json
import os
import shutil
import subprocess

import blosc2
import numpy as np

from harness import Harness, TestFailure, check, check_equal, read_file, wait_until
from remote_servers import Apache, Caddy, Lighttpd, Nginx, PlainHttpServer
from test_collections import description, expect_eio, make_folder, same_as_single_mounts
from test_remote import same_trees

EXIT_MISSING, EXIT_INVALID = 2, 3


def make_places(h, root):
    """A sparse b2nd, a fixture sparse frame and a .b2d store with leaves in a
    group directory and a name to encode, in `root`."""
    rng = np.random.default_rng(29)
    blosc2.asarray(rng.integers(0, 1000, size=(120, 90)).astype("i4"),
                   urlpath=os.path.join(root, "py-sparse.b2nd"), chunks=(40, 90), blocks=(10, 90),
                   contiguous=False, mode="w")
    shutil.copytree(h.frame("b2nd-4d-i2-sframe.b2nd"), os.path.join(root, "b2nd-4d-i2-sframe.b2nd"))
    big = rng.integers(0, 1000, size=(60, 500)).astype("f8")
    with blosc2.DictStore(os.path.join(root, "py-dict.b2d"), mode="w", threshold=20000) as s:
        s["/big"] = big                                    # external: over the threshold
        s["/grp/a b+c"] = big[:40] * 2                     # external, in a group directory, encoded in hrefs
        s["/grp/deeper/x%y"] = big[:30] + 1                # external, two levels down, a '%' in its name
        s["/grp/small"] = np.arange(50, dtype="i2")        # embedded
    # python-blosc2 makes some files 0600: the servers' workers must read them.
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)
    return ["py-sparse.b2nd", "b2nd-4d-i2-sframe.b2nd", "py-dict.b2d"]


def one_line(r, what):
    lines = r.stderr.strip().splitlines()
    check_equal(len(lines), 1, f"{what}: lines on stderr ({r.stderr.strip()!r})")
    return lines[0]


def mounts_equal_local(h, root, places, server, label):
    """Each place mounted by URL (with and without the trailing '/') reads as its local mount."""
    for name in places:
        local = h.mount(os.path.join(root, name), ["-o", "ro"])
        try:
            for url in (f"{server.url}/{name}", f"{server.url}/{name}/"):
                try:
                    remote = h.mount(url)
                except TestFailure as e:
                    raise TestFailure(f"{label}: {e}")
                try:
                    same_trees(local, remote, f"{label}: {url}")
                finally:
                    h.unmount(remote)
        finally:
            h.unmount(local)
    print(f"  {label}: {len(places)} places, each by two URLs, read as their local mounts", flush=True)


def nginx_lists_the_store_directories(h, nginx):
    """The .b2d's listing is one index page per directory of it, nothing else listed."""
    before = len(nginx.requests())
    r = h.run(["--info", f"{nginx.url}/py-dict.b2d/"])
    check_equal(r.returncode, 0, f"--info of the .b2d: {r.stderr.strip()}")
    asked = [q["path"] for q in nginx.requests()[before:]]
    indexes = sorted(p for p in asked if p.endswith("/"))
    check_equal(indexes, ["/py-dict.b2d/", "/py-dict.b2d/grp/", "/py-dict.b2d/grp/deeper/"], "index pages asked")
    check(all(p.startswith("/py-dict.b2d/") for p in asked), f"a request outside the store: {asked}")


def no_index_refused(h, nginx_plain):
    """nginx without autoindex answers 403 for a directory: a .b2d there cannot be listed."""
    for url in (f"{nginx_plain.url}/py-dict.b2d", f"{nginx_plain.url}/py-dict.b2d/"):
        for args in (["--info", url], [url, h.new_dir()]):
            r = h.run(args)
            check_equal(r.returncode, EXIT_INVALID, f"{args[0]}: exit status ({r.stderr.strip()})")
            line = one_line(r, url)
            for part in (f"{nginx_plain.url}/py-dict.b2d/", "cannot be listed", "HTTP 403", "autoindex on"):
                check(part in line, f"the message lacks {part!r}: {line}")


def plain_server_lists_but_refuses(h, plain):
    """python's http.server lists directories but ignores Range: every dataset is refused with one line."""
    for name in ("py-sparse.b2nd", "py-dict.b2d", "py-dict.b2d/", "b2nd-4d-i2-sframe.b2nd/"):
        r = h.run(["--info", f"{plain.url}/{name}"])
        check_equal(r.returncode, EXIT_INVALID, f"{name} on http.server: exit status ({r.stderr.strip()})")
        line = one_line(r, name)
        check("ignores Range" in line, f"{name} on http.server: {line}")


HOSTILE_LINKS = """
<a href="../">../</a> <a href="/">parent</a> <a href="../secret.b2nd">up</a> <a href="/secret.b2nd">absolute</a>
<a href="../../../../etc/passwd">far up</a> <a href="%2E%2E/secret.b2nd">encoded dots</a>
<a href="..%2Fsecret.b2nd">encoded slash</a> <a href="grp%2F..%2F..%2Fsecret.b2nd">encoded both</a>
<a href="%2e%2e%2fsecret.b2nd">lower</a> <a href="&#46;&#46;/secret.b2nd">entities</a>
<a href="&#x2F;secret.b2nd">entity slash</a> <a href="%00.b2nd">NUL</a> <a href="..">dotdot</a> <a href=".">dot</a>
<a href="http://{host}/secret.b2nd">same host, outside</a> <a href="//{host}/secret.b2nd">network path</a>
<a href="http://localhost:{port}/{place}/big.b2nd">another host name</a>
<a href="http://203.0.113.7/{place}/big.b2nd">another host</a> <a href="https://{host}/{place}/big.b2nd">https</a>
<a href="?C=N;O=D">sort</a> <a href="?C=M;O=A">sort</a> <a href="#top">fragment</a> <a href="big.b2nd?x=1">query</a>
<a href="mailto:root@localhost">mail</a> <a href="javascript:fetch('/secret.b2nd')">js</a>
<a href="data:text/html,<a href=/secret.b2nd>">data</a> <a href="outside/../../secret.b2nd">dots inside</a>
"""


def write_hostile_store(root, place, host, port, extra_links=""):
    """A copy of py-dict.b2d whose every directory serves an index.html of hostile links
    beside the real ones (nginx serves index.html in place of its own index)."""
    top = os.path.join(root, place)
    shutil.copytree(os.path.join(root, "py-dict.b2d"), top)
    for base, dirs, files in os.walk(top):
        real = "".join(f'<a href="{d}/">{d}</a>\n' for d in dirs) + "".join(
            f'<a href="{f.replace("%", "%25").replace(" ", "%20")}">{f}</a>\n' for f in files)
        hostile = HOSTILE_LINKS.format(host=host, port=port, place=place) + extra_links
        with open(os.path.join(base, "index.html"), "w") as f:
            f.write(f"<html><body><pre>\n{hostile}\n{real}</pre></body></html>\n")
    subprocess.run(["chmod", "-R", "a+rX", top], check=True)


def honest_store_behind(h, root, nginx, path, what):
    """Mounts nginx's `path` and checks it reads as the local py-dict.b2d; the paths nginx was asked for."""
    local = h.mount(os.path.join(root, "py-dict.b2d"), ["-o", "ro"])
    before = len(nginx.requests())
    try:
        remote = h.mount(nginx.url + path)
        try:
            same_trees(local, remote, what)
        finally:
            h.unmount(remote)
    finally:
        h.unmount(local)
    return [q["path"] for q in nginx.requests()[before:]]


def hostile_indexes(h, root, nginx):
    """Links out of the place are ignored: the store reads as the honest one, and the
    daemon asks nginx for nothing outside the place (its access log)."""
    host = f"127.0.0.1:{nginx.port}"
    shutil.copy(os.path.join(root, "py-dict.b2d", "big.b2nd"), os.path.join(root, "secret.b2nd"))
    os.chmod(os.path.join(root, "secret.b2nd"), 0o644)
    write_hostile_store(root, "evil.b2d", host, nginx.port)
    asked = honest_store_behind(h, root, nginx, "/evil.b2d", "a store behind hostile indexes")
    outside = [p for p in asked if p != "/evil.b2d" and not p.startswith("/evil.b2d/")]
    check(not outside, f"asked for paths outside the place: {outside}")
    # nginx logs the index.html it served for a directory's URL.
    check("/evil.b2d/grp/deeper/index.html" in asked, f"the walk missed a directory: {asked}")
    print(f"  {len(asked)} requests, all inside /evil.b2d/", flush=True)


def hostile_json_index(h, root, nginx):
    """The same with a JSON index (as nginx's autoindex_format json) naming entries out of the place."""
    top = os.path.join(root, "evil-json.b2d")
    shutil.copytree(os.path.join(root, "py-dict.b2d"), top)
    for base, dirs, files in os.walk(top):
        entries = [f'{{"name":"{d}","type":"directory"}}' for d in dirs] + [
            f'{{"name":"{f}","type":"file","size":1}}' for f in files]
        entries += ['{"name":"../secret.b2nd","type":"file"}', '{"name":"..","type":"directory"}',
                    '{"name":"/secret.b2nd","type":"file"}', '{"name":"a/../../secret.b2nd","type":"file"}',
                    '{"name":".","type":"directory"}', '{"name":"x\\u0000y","type":"file"}']
        with open(os.path.join(base, "index.html"), "w") as f:
            f.write("[\n" + ",\n".join(entries) + "\n]\n")
    subprocess.run(["chmod", "-R", "a+rX", top], check=True)
    asked = honest_store_behind(h, root, nginx, "/evil-json.b2d/", "a store behind a hostile JSON index")
    outside = [p for p in asked if not p.startswith("/evil-json.b2d/")]
    check(not outside, f"asked for paths outside the place: {outside}")


def bounded_indexes(h, root, nginx):
    """A loop of directories, an index of 2,000,000 entries and one of 65 MiB: each
    refused with one line naming the place and the bound; nothing outside asked."""
    store = os.path.join(root, "py-dict.b2d")
    # nginx follows symbolic links: grp/again/again/... is a directory at every depth.
    loop = os.path.join(root, "loop.b2d")
    shutil.copytree(store, loop)
    os.symlink("..", os.path.join(loop, "grp", "again"))
    many = os.path.join(root, "many.b2d")
    os.makedirs(many)
    shutil.copy(os.path.join(store, "embed.b2e"), many)
    with open(os.path.join(many, "index.html"), "w") as f:
        f.write("<html><body><pre>\n")
        for start in range(0, 2_000_000, 100_000):
            f.write("".join(f'<a href="k{i:07d}.b2nd">k</a>\n' for i in range(start, start + 100_000)))
        f.write("</pre></body></html>\n")
    huge = os.path.join(root, "huge.b2d")
    os.makedirs(huge)
    shutil.copy(os.path.join(store, "embed.b2e"), huge)
    with open(os.path.join(huge, "index.html"), "wb") as f:
        f.write(b"<html><body><pre>\n")
        f.truncate(65 << 20)  # a hole: 65 MiB of NULs nginx reads from nowhere
    subprocess.run(["chmod", "-R", "a+rX", loop, many, huge], check=True)
    cases = [("loop.b2d", "directories nested more than 64 deep"),
             ("many.b2d", "a directory index of more than 1,000,000 entries: refused"),
             ("huge.b2d", "a directory index page over 64 MiB: refused")]
    for place, bound in cases:
        before = len(nginx.requests())
        r = h.run(["--info", f"{nginx.url}/{place}/"], timeout=300)
        check_equal(r.returncode, EXIT_INVALID, f"{place}: exit status ({r.stderr.strip()[:300]})")
        line = one_line(r, place)
        check(bound in line and f"{nginx.url}/{place}/" in line, f"{place}: {line}")
        asked = [q["path"] for q in nginx.requests()[before:]]
        check(all(p.startswith(f"/{place}/") for p in asked), f"{place}: asked outside it: {asked[:20]}")
        print(f"  {place}: {line[:160]} ({len(asked)} requests)", flush=True)


def other_server_lists_too(h, root, places, server, label):
    mounts_equal_local(h, root, places, server, label)
    # lighttpd writes its access log in batches.
    check(wait_until(lambda: any(q["path"] == "/py-dict.b2d/grp/deeper/" for q in server.requests()), 30),
          f"{label}: the index of grp/deeper/ was never asked for")
    asked = [q["path"] for q in server.requests()]
    check(all(any(p.startswith(f"/{name}") for name in places) for p in asked),
          f"{label}: a request outside the places: {asked}")


# --- collections: a folder of datasets behind a web index (issue 29) ---

def make_lake(h, root):
    """The local collection test's folder (test_collections.make_folder, without
    links and fifo, which web servers follow or cannot serve) in root/lake."""
    lake = os.path.join(root, "lake")
    os.makedirs(lake)
    datasets = make_folder(h, lake, hostile=False)
    subprocess.run(["chmod", "-R", "a+rX", lake], check=True)
    return lake, datasets


def collection_shape(mnt):
    """Every entry collection.json lists (the collection's levels, not inside datasets):
    path -> (type, kind)."""
    return {e["path"]: (e["type"], e.get("kind")) for e in description(mnt)["entries"]}


def web_collection(h, lake, datasets, server, label):
    """The folder behind a web index mounts as a collection: the local collection's
    tree (datasets as their single mounts, other files as themselves, the corrupt
    one EIO and named in collection.json), by URL with and without the '/'."""
    local = h.mount(lake, ["-o", "ro"])
    try:
        want = collection_shape(local)
        for url in (f"{server.url}/lake/", f"{server.url}/lake"):
            before = len(server.requests())
            mnt = h.mount(url)
            try:
                j = description(mnt)
                check_equal(j["type"], "web index", f"{label}: collection.json's type")
                check_equal(j["open_datasets"], 0, f"{label}: datasets open after mounting")
                check_equal(sorted(os.listdir(mnt)), sorted(os.listdir(local)), f"{label}: the top's names")
                got = collection_shape(mnt)
                # Remote places go by name: a frame without a suffix is a plain file there.
                check_equal(got, dict(want, **{"no-suffix": ("file", "file")}), f"{label}: the collection's levels")
                check_equal(description(mnt)["open_datasets"], 0, f"{label}: datasets open after listing")
                web_datasets = {k: v for k, v in datasets.items() if k != "no-suffix"}
                same_as_single_mounts(h, lake, mnt, web_datasets, f"{label} {url}")
                for rel in ("README.md", "one/table.csv", "no-suffix"):
                    check_equal(read_file(os.path.join(mnt, rel)), read_file(os.path.join(lake, rel)),
                                f"{label}: {rel}")
                expect_eio(os.path.join(mnt, "corrupt.b2nd"), f"{label}: a corrupt dataset")
                failed = description(mnt)["failed"]
                check(any(f["path"] == "corrupt.b2nd" and f["why"] for f in failed), f"{label}: failed {failed}")
                kinds = {e["path"]: e.get("kind") for e in description(mnt)["entries"]}
                check_equal((kinds["store.b2d"], kinds["py-sparse.b2nd"], kinds["README.md"]),
                            ("b2d", "sparse_frame", "file"), f"{label}: kinds found by listing")
            finally:
                h.unmount(mnt)
            asked = [q["path"] for q in server.requests()[before:]]
            check(all(p == "/lake" or p.startswith("/lake/") for p in asked),
                  f"{label}: asked outside the place: {[p for p in asked if not p.startswith('/lake')]}")
        r = h.run(["--info", f"{server.url}/lake/"])
        check_equal(r.returncode, 0, f"{label}: --info of the collection: {r.stderr.strip()}")
        check_equal(json.loads(r.stdout)["type"], "web index", f"{label}: --info's type")
    finally:
        h.unmount(local)
    print(f"  {label}: {len(datasets) - 1} datasets read as their single mounts", flush=True)


def web_collection_without_ranges(h, lake, datasets, plain):
    """python's http.server lists the folder (the same names) but answers no ranges:
    each dataset reads EIO, named in collection.json as refused for that."""
    mnt = h.mount(f"{plain.url}/lake/")
    try:
        check_equal(sorted(os.listdir(mnt)), sorted(os.listdir(lake) + ["collection.json", "zarr.json"]), "the names listed")
        for rel in sorted(datasets):
            if rel != "no-suffix":
                expect_eio(os.path.join(mnt, rel), f"http.server: {rel}")
        failed = {f["path"]: f["why"] for f in description(mnt)["failed"]}
        for rel in datasets:
            if rel != "no-suffix":
                check(rel in failed and "ignores Range" in failed[rel] and "\n" not in failed[rel],
                      f"http.server: {rel} in collection.json's failed: {failed.get(rel)}")
    finally:
        h.unmount(mnt)


def web_collection_refused(h, root, nginx, nginx_plain):
    """No index (nginx without autoindex: 403), 2,000,000 entries, 65 MiB: the
    collection is refused at mount with one line naming the place and the cause."""
    many = os.path.join(root, "many-links")
    os.makedirs(many)
    with open(os.path.join(many, "index.html"), "w") as f:
        f.write("<html><body><pre>\n")
        for start in range(0, 2_000_000, 100_000):
            f.write("".join(f'<a href="k{i:07d}.b2nd">k</a>\n' for i in range(start, start + 100_000)))
        f.write("</pre></body></html>\n")
    huge = os.path.join(root, "huge-index")
    os.makedirs(huge)
    with open(os.path.join(huge, "index.html"), "wb") as f:
        f.write(b"<html><body><pre>\n")
        f.truncate(65 << 20)
    subprocess.run(["chmod", "-R", "a+rX", many, huge], check=True)
    cases = [(f"{nginx_plain.url}/lake/", ["cannot be listed", "HTTP 403", "autoindex on"]),
             (f"{nginx.url}/many-links/", ["a directory index of more than 1,000,000 entries: refused"]),
             (f"{nginx.url}/huge-index/", ["a directory index page over 64 MiB: refused"])]
    for url, parts in cases:
        for args in (["--info", url], [url, h.new_dir()]):
            r = h.run(args, timeout=300)
            check(r.returncode != 0, f"{url}: {args[0]} worked")
            line = one_line(r, url)
            for part in [url] + parts:
                check(part in line, f"{url}: the message lacks {part!r}: {line}")
        print(f"  {line[:200]}", flush=True)


def hostile_web_collection(h, root, nginx):
    """A collection whose index pages link out of the place: only its own entries
    show, and nginx is asked for nothing outside it."""
    place = os.path.join(root, "hostile-lake")
    os.makedirs(os.path.join(place, "sub"))
    blosc2.asarray(np.arange(100, dtype="i4"), urlpath=os.path.join(place, "ok.b2nd"), mode="w")
    blosc2.asarray(np.arange(10, dtype="i4"), urlpath=os.path.join(place, "sub", "inner.b2nd"), mode="w")
    shutil.copy(os.path.join(place, "ok.b2nd"), os.path.join(root, "secret.b2nd"))
    host = f"127.0.0.1:{nginx.port}"
    hostile = HOSTILE_LINKS.format(host=host, port=nginx.port, place="hostile-lake")
    for rel, real in (("", '<a href="ok.b2nd">ok</a> <a href="sub/">sub</a>'),
                      ("sub", '<a href="inner.b2nd">inner</a> <a href="../../secret.b2nd">up</a>')):
        with open(os.path.join(place, rel, "index.html"), "w") as f:
            f.write(f"<html><body><pre>\n{hostile}\n{real}\n</pre></body></html>\n")
    subprocess.run(["chmod", "-R", "a+rX", place, os.path.join(root, "secret.b2nd")], check=True)
    before = len(nginx.requests())
    mnt = h.mount(f"{nginx.url}/hostile-lake/")
    try:
        check_equal(sorted(os.listdir(mnt)), ["collection.json", "ok.b2nd", "sub", "zarr.json"], "the hostile collection's top")
        check_equal(sorted(os.listdir(os.path.join(mnt, "sub"))), ["inner.b2nd", "zarr.json"], "its sub/")
        check_equal(np.load(os.path.join(mnt, "ok.b2nd", "array.npy")).tolist(), list(range(100)), "ok.b2nd")
        check_equal(np.load(os.path.join(mnt, "sub", "inner.b2nd", "array.npy")).tolist(), list(range(10)),
                    "sub/inner.b2nd")
        paths = sorted(e["path"] for e in description(mnt)["entries"])
        check_equal(paths, ["ok.b2nd", "sub", "sub/inner.b2nd"], "collection.json's entries")
    finally:
        h.unmount(mnt)
    asked = [q["path"] for q in nginx.requests()[before:]]
    outside = [p for p in asked if not p.startswith("/hostile-lake/")]
    check(not outside, f"asked for paths outside the place: {outside}")
    print(f"  {len(asked)} requests, all inside /hostile-lake/", flush=True)


def main():
    h = Harness("web directory indexes: nginx (HTML, JSON), lighttpd, Apache, Caddy, http.server", watchdog_seconds=600)
    h.require_fuse()
    root = h.new_dir("served")
    places = make_places(h, root)
    lake, datasets = make_lake(h, root)
    with Nginx(root, h.workdir, autoindex="html") as nginx, Nginx(root, h.workdir) as nginx_plain:
        h.test("a collection behind nginx autoindex (HTML): the local collection's tree", web_collection, h, lake,
               datasets, nginx, "nginx autoindex")
        h.test("nginx without autoindex: a .b2d is refused with one line naming the cause", no_index_refused, h,
               nginx_plain)
        h.test("a collection with no index, 2,000,000 entries or 65 MiB: refused with one line",
               web_collection_refused, h, root, nginx, nginx_plain)
        h.test("a collection behind hostile indexes: only its own entries, nothing outside asked",
               hostile_web_collection, h, root, nginx)
        h.test("nginx autoindex (HTML): sparse frames and a .b2d by URL read as their local mounts",
               mounts_equal_local, h, root, places, nginx, "nginx autoindex")
        h.test("a .b2d's listing asks one index page per directory of it", nginx_lists_the_store_directories, h,
               nginx)
        h.test("hostile HTML indexes: links out of the place ignored, nothing outside asked", hostile_indexes, h,
               root, nginx)
        h.test("hostile JSON index: names out of the place ignored, nothing outside asked", hostile_json_index, h,
               root, nginx)
        h.test("a directory loop, 2,000,000 entries, 65 MiB: refused with one line", bounded_indexes, h, root,
               nginx)
    with Nginx(root, h.workdir, autoindex="json") as nginx_json:
        h.test("nginx autoindex_format json: the same places read as their local mounts", mounts_equal_local, h,
               root, places, nginx_json, "nginx autoindex json")
        h.test("a collection behind nginx autoindex_format json: the local collection's tree", web_collection, h,
               lake, datasets, nginx_json, "nginx autoindex json")
    with PlainHttpServer(root, h.workdir) as plain:
        h.test("python's http.server: listed, but refused for ignoring Range", plain_server_lists_but_refuses, h,
               plain)
        h.test("a collection behind http.server: listed, every dataset refused for ignoring Range",
               web_collection_without_ranges, h, lake, datasets, plain)
    for server_class, program, label in ((Lighttpd, "lighttpd", "lighttpd mod_dirlisting"),
                                         (Apache, "apache2", "Apache mod_autoindex"),
                                         (Caddy, "caddy", "Caddy file_server browse")):
        if not (shutil.which(program) or os.path.exists(f"/usr/sbin/{program}")):
            print(f"FAIL {label}: {program} is not installed (scripts/install-deps.sh installs it)", flush=True)
            h.failed += 1
            continue
        with server_class(root, h.workdir) as server:
            h.test(f"{label}: the same places read as their local mounts", other_server_lists_too, h, root,
                   places, server, label)
            if server_class is Caddy:
                h.test(f"a collection behind {label}: the local collection's tree", web_collection, h, lake,
                       datasets, server, label)
    h.finish()


if __name__ == "__main__":
    main()
