"""The Debian package, as a user gets it: builds it from the build tree of
--binary (BUILD/src/fs/blosc2fs) with `cmake --build BUILD --target package`,
checks its control data and files, unpacks it into a throwaway root, installs
it on this machine with apt-get (CI runs as root on a throwaway machine),
mounts a fixture through mount(8) and an fstab line (a frame, and a folder as
a collection), checks the systemd units with systemd-analyze verify, runs the
service's ExecStart as systemd would (Type=notify; FRAME a file, a URL, a
collection), and removes the package again if it was not installed before."""

import gzip
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remote_servers import Nginx  # noqa: E402
from harness import (FUSERMOUNT, PATIENCE, Harness, TestFailure, check, check_equal, gunzip, read_file,  # noqa: E402
                     wait_until)

SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIXTURE = "codec-lz4-shuffle-f4.b2frame"
UNIT_DIR = "/lib/systemd/system"
DOC_DIR = "/usr/share/doc/blosc2fs"
EXAMPLES = ["data-x.mount", "data-x.automount", "mnt-x.conf"]


def source_docs():
    """Every regular file under the source tree's docs/ (the pages the README links, the
    pictures they show), as paths relative to docs/: the package installs them all."""
    top = os.path.join(SOURCE_ROOT, "docs")
    found = []
    for dirpath, _, names in os.walk(top):
        found += [os.path.relpath(os.path.join(dirpath, n), top) for n in names
                  if os.path.isfile(os.path.join(dirpath, n)) and not os.path.islink(os.path.join(dirpath, n))]
    return sorted(found)


DOCS = source_docs()
# Every regular file of the package, and its mode.
PACKAGE_FILES = {
    "usr/bin/blosc2fs": 0o755,
    "usr/share/man/man1/blosc2fs.1.gz": 0o644,
    "lib/systemd/system/blosc2fs@.service": 0o644,
    "usr/share/doc/blosc2fs/README.md": 0o644,
    "usr/share/doc/blosc2fs/copyright": 0o644,
    **{f"usr/share/doc/blosc2fs/examples/{name}": 0o644 for name in EXAMPLES},
    **{f"usr/share/doc/blosc2fs/docs/{name}": 0o644 for name in DOCS},
    # The desktop's view of Blosc2 files (docs/desktop.md).
    "usr/share/mime/packages/blosc2fs.xml": 0o644,
    "usr/share/thumbnailers/blosc2.thumbnailer": 0o644,
}
# What shared-mime-info's trigger makes of the XML: one file per type.
MIME_TYPES = ["application/x-blosc2-frame", "application/x-blosc2-b2nd", "application/x-blosc2-sparse-frame",
              "application/x-blosc2-embed-store", "application/x-blosc2-zip-store"]
ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8")
# Another apt or dpkg (unattended-upgrades, a second test run) may hold dpkg's
# locks: apt-get waits this long for them instead of failing at once.
APT_LOCK_WAIT = 600
APT_GET = ["apt-get", "-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT}"]


def run(cmd, timeout=120, check_rc=True, **kwargs):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=kwargs.pop("env", ENV),
                       stdin=subprocess.DEVNULL, **kwargs)
    if check_rc and r.returncode != 0:
        raise TestFailure(f"{' '.join(cmd)} failed with status {r.returncode}: "
                          f"{(r.stderr or r.stdout).strip()[-2000:]}")
    return r


class State:
    """What earlier steps found, for the later ones."""

    def __init__(self, h):
        self.h = h
        self.build_dir = os.path.dirname(os.path.dirname(os.path.dirname(h.binary)))
        self.deb = None
        self.version = None
        self.root = os.path.join(h.workdir, "root")  # the package unpacked by dpkg -x
        self.frame = os.path.join(h.workdir, FIXTURE)
        self.was_installed = package_installed()

    def need_deb(self):
        check(self.deb is not None, "no package was built (see package.build)")
        return self.deb


def package_installed():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "blosc2fs"], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def control_fields(deb):
    out = run(["dpkg-deb", "-f", deb]).stdout
    fields, key = {}, None
    for line in out.splitlines():
        if line.startswith(" ") and key:
            fields[key] += "\n" + line[1:]
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    return fields


def depends_names(depends):
    """Package names of a Depends field ("a (>= 1), b | c" -> {a, b, c})."""
    names = set()
    for alternative in re.split(r"[,|]", depends):
        name = alternative.strip().split(" ")[0].split(":")[0]
        if name:
            names.add(name)
    return names


def needed_library_paths(binary):
    """Where the dynamic loader finds the libraries binary itself needs (its
    DT_NEEDED entries, what dpkg-shlibdeps turns into Depends); the libraries
    those pull in are their own packages' dependencies."""
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "-d", binary]).stdout))
    check(needed, f"readelf -d {binary} lists no NEEDED libraries")
    paths = []
    for line in run(["ldd", binary]).stdout.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(/\S+)", line)
        if m and m.group(1) in needed:
            paths.append(m.group(2))
    check_equal(len(paths), len(needed), f"libraries of {binary} that ldd resolves")
    return paths


def owning_package(path):
    """The package owning path (also through the /lib -> /usr/lib merge), and what it provides."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.append("/usr" + p)
    for p in candidates:
        r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            pkg = r.stdout.split(":", 1)[0].strip().split(",")[0].strip()
            prov = subprocess.run(["dpkg-query", "-W", "-f=${Provides}", pkg], capture_output=True,
                                  text=True).stdout
            return pkg, depends_names(prov)
    raise TestFailure(f"no installed package owns {path}")


def daemons_serving(mnt):
    """PIDs of live (not zombie) blosc2fs processes whose command line names mnt."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and argv and argv[0].endswith(b"blosc2fs") and mnt.encode() in argv:
            pids.append(int(entry))
    return pids


def mount_entry(mnt):
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 3 and parts[1] == mnt:
                return parts
    return None


def register_mount(h, mnt):
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)


def unmount_and_wait_daemon(h, mnt, command):
    """Unmounts with command (e.g. fusermount3 -u, umount) and checks the daemon exits."""
    conn = h.mounts.pop(mnt, None)
    r = subprocess.run(command + [mnt], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        h._abort(conn)
        subprocess.run([FUSERMOUNT, "-u", "-z", mnt], capture_output=True, timeout=30)
        raise TestFailure(f"{' '.join(command)} {mnt} failed: {r.stderr.strip()}")
    check(wait_until(lambda: not os.path.ismount(mnt)), f"{mnt} still mounted after {command[0]}")
    check(wait_until(lambda: not daemons_serving(mnt)),
          f"the daemon of {mnt} still runs {PATIENCE} s after the unmount: pids {daemons_serving(mnt)}")


def check_mounted_tree(h, mnt):
    """The fixture's tree reads right through the mount."""
    expect = h.expect(FIXTURE)
    info = json.loads(read_file(os.path.join(mnt, "frame.json")))
    check_equal(info.get("nchunks"), expect["nchunks"], "frame.json nchunks")
    check_equal(info.get("nbytes"), expect["nbytes"], "frame.json nbytes")
    want = gunzip(h.expect_file(FIXTURE, ".data.gz"))
    check(len(want) == expect["nbytes"], "the fixture's expected data is incomplete")
    data = read_file(os.path.join(mnt, "data"))
    check(data == want, f"data differs from c-blosc2's ({len(data)} vs {len(want)} bytes)")
    first = expect["chunks"][0]["nbytes"]
    check(read_file(os.path.join(mnt, "chunks", "00000000")) == want[:first], "chunks/00000000 differs")
    stats = read_file(os.path.join(mnt, ".blosc2fs-cache")).decode()
    check("hits=" in stats and "budget=" in stats, f".blosc2fs-cache reads {stats!r}")


def make_collection(h):
    """A local folder holding the fixture one directory down and a README: a
    collection (neither a sparse frame nor a .b2d store), as FRAME."""
    root = os.path.join(h.workdir, "collection")
    if not os.path.isdir(root):
        os.makedirs(os.path.join(root, "runs"))
        shutil.copyfile(h.frame(FIXTURE), os.path.join(root, "runs", FIXTURE))
        with open(os.path.join(root, "README.txt"), "w") as f:
            f.write("a collection\n")
    return root


def check_collection_tree(h, mnt):
    """The collection's tree reads right through the mount: collection.json,
    the README as itself, and the dataset's directory as the fixture's tree."""
    info = json.loads(read_file(os.path.join(mnt, "collection.json")))
    check_equal(info.get("type"), "local directory", "collection.json's type")
    check("README.txt" in {e.get("path") for e in info.get("entries", [])},
          f"collection.json does not list README.txt: {info.get('entries')}")
    check_equal(read_file(os.path.join(mnt, "README.txt")), b"a collection\n", "README.txt")
    check_mounted_tree(h, os.path.join(mnt, "runs", FIXTURE))


# The tools these tests use, and the Debian package of each.
TOOLS = {"cmake": "cmake", "cpack": "cmake", "dpkg-deb": "dpkg", "dpkg-shlibdeps": "dpkg-dev",
         "apt-get": "apt", "groff": "groff-base", "readelf": "binutils", "ldd": "libc-bin",
         "systemd-analyze": "systemd", "systemd-escape": "systemd", "mount": "mount", "umount": "mount",
         "fusermount3": "fuse3", "gzip": "gzip"}


def test_tools(h, s):
    missing = sorted({pkg for tool, pkg in TOOLS.items() if not shutil.which(tool)})
    check(not missing, f"tools missing: apt-get install {' '.join(missing)}")
    check(os.geteuid() == 0, "these tests install a package and mount with mount(8): run them as root")


# --- the package ---

def test_build(h, s):
    check(os.path.exists(os.path.join(s.build_dir, "CMakeCache.txt")),
          f"{s.build_dir} (from --binary) is not a CMake build tree")
    for old in os.listdir(s.build_dir):
        if old.startswith("blosc2fs_") and old.endswith(".deb"):
            os.remove(os.path.join(s.build_dir, old))
    started = time.time()
    run(["cmake", "--build", s.build_dir, "--target", "package"], timeout=800)
    print(f"  cmake --build {s.build_dir} --target package: {time.time() - started:.1f}s", flush=True)
    with open(os.path.join(s.build_dir, "CPackConfig.cmake")) as f:
        m = re.search(r'set\(CPACK_PACKAGE_VERSION "([^"]+)"\)', f.read())
    check(m is not None, "CPackConfig.cmake has no CPACK_PACKAGE_VERSION")
    s.version = m.group(1)
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    debs = sorted(f for f in os.listdir(s.build_dir) if f.endswith(".deb"))
    check_equal(debs, [f"blosc2fs_{s.version}_{arch}.deb"], "packages built")
    s.deb = os.path.join(s.build_dir, debs[0])


def test_control(h, s):
    deb = s.need_deb()
    fields = control_fields(deb)
    check_equal(fields.get("Package"), "blosc2fs", "Package")
    check_equal(fields.get("Version"), s.version, "Version")
    check_equal(fields.get("Architecture"), run(["dpkg", "--print-architecture"]).stdout.strip(), "Architecture")
    for key in ("Maintainer", "Description", "Section", "Priority", "Installed-Size"):
        check(fields.get(key), f"control field {key} is missing")
    summary, _, long_text = fields["Description"].partition("\n")
    check(summary and long_text.strip() and summary.strip() not in long_text.splitlines()[0],
          f"Description needs a summary line and a different long text: {fields['Description']!r}")
    depends = depends_names(fields.get("Depends", ""))
    # The project, with an address that is not a placeholder.
    maintainer = fields["Maintainer"]
    check(re.fullmatch(r"The blosc2fs developers <[^<>@\s]+@[^<>@\s]+\.[a-z]{2,}>", maintainer) is not None,
          f"Maintainer does not name the project with a real address: {maintainer!r}")
    for name in ("fuse3", "liburing2", "libnuma1", "libsystemd0", "liblz4-1", "libzstd1", "zlib1g", "libpng16-16", "libc6",
                 "libstdc++6"):
        check(name in depends, f"Depends lacks {name}: {fields.get('Depends')}")
    # Every library the daemon links comes from a package named in Depends
    # (directly or through Provides, as libspdlog1.10 provides libspdlog1.10-fmt9).
    for lib in needed_library_paths(h.binary):
        if os.path.basename(lib).startswith(("ld-linux", "linux-vdso")):
            continue
        pkg, provides = owning_package(lib)
        check(pkg in depends or provides & depends,
              f"{lib} comes from {pkg}, which Depends does not name: {fields.get('Depends')}")
    print(f"  Depends: {fields['Depends']}", flush=True)
    check("shared-mime-info" in depends_names(fields.get("Recommends", "")),
          f"Recommends lacks shared-mime-info (its trigger registers the MIME types): {fields.get('Recommends')}")


def test_contents(h, s):
    deb = s.need_deb()
    listing = run(["dpkg-deb", "-c", deb]).stdout.splitlines()
    files = {}
    for line in listing:
        parts = line.split(None, 5)
        mode, owner, path = parts[0], parts[1], parts[5].split(" -> ")[0]
        check_equal(owner, "root/root", f"owner of {path}")
        path = path[2:] if path.startswith("./") else path
        if mode.startswith("-"):
            files[path] = mode
        else:
            check(mode.startswith("d"), f"{path}: unexpected entry {line}")
    check_equal(sorted(files), sorted(PACKAGE_FILES), "regular files of the package")
    for path, want in PACKAGE_FILES.items():
        got = 0
        for i, c in enumerate(files[path][1:10]):
            if c != "-":
                got |= 1 << (8 - i)
        check_equal(oct(got), oct(want), f"mode of {path}")


def dep5_paragraphs(text):
    """The paragraphs of a Debian machine-readable copyright file, as dicts of
    field -> value (continuation lines joined with newlines, " ." as empty)."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        fields, key = {}, None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")):
                check(key is not None, f"copyright: a continuation line opens a paragraph: {line!r}")
                fields[key] += "\n" + ("" if line.strip() == "." else line[1:])
            else:
                key, sep, value = line.partition(":")
                check(sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", key), f"copyright: not a field: {line!r}")
                check(key not in fields, f"copyright: field {key} twice in one paragraph")
                fields[key] = value.strip()
        paragraphs.append(fields)
    return paragraphs


def test_copyright(h, s):
    """usr/share/doc/blosc2fs/copyright: Debian's machine-readable format 1.0,
    every license it names spelled out, the project's own being LICENSE."""
    check(os.path.isdir(s.root), "the package was not unpacked (see package.extracted_root)")
    text = read_file(os.path.join(s.root, "usr/share/doc/blosc2fs/copyright")).decode()
    check_equal(text, read_file(os.path.join(SOURCE_ROOT, "packaging", "copyright")).decode(),
                "the packaged copyright file against packaging/copyright")
    header, *rest = dep5_paragraphs(text)
    check_equal(header.get("Format"), "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
                "copyright Format")
    check_equal(header.get("Upstream-Name"), "blosc2fs", "copyright Upstream-Name")
    files = [p for p in rest if "Files" in p]
    texts = {p["License"].split("\n", 1)[0]: p["License"].split("\n", 1)[1] for p in rest
             if "Files" not in p and "\n" in p.get("License", "")}
    check(files and files[0]["Files"] == "*", "copyright: the first Files paragraph is not Files: *")
    for p in files:
        check(p.get("Copyright") and p.get("License"), f"copyright: Files: {p['Files']} lacks Copyright or License")
    for name in {p["License"].split("\n")[0] for p in files} | {header.get("License", "").split("\n")[0]} - {""}:
        check(name in texts, f"copyright: license {name} is named but not spelled out")
    check("The blosc2fs developers" in files[0]["Copyright"], f"Files: * is not ours: {files[0]['Copyright']}")
    ours = texts[files[0]["License"]]
    license_text = read_file(os.path.join(SOURCE_ROOT, "LICENSE")).decode()
    words = lambda t: re.findall(r"[A-Za-z0-9]+", t)  # noqa: E731
    check(words(ours) == words(license_text.split("\n", 2)[2]),
          "the license in copyright differs from LICENSE")


def test_extracted_root(h, s):
    deb = s.need_deb()
    shutil.rmtree(s.root, ignore_errors=True)
    run(["dpkg", "-x", deb, s.root])
    binary = os.path.join(s.root, "usr/bin/blosc2fs")
    r = run([binary, "-V"])
    check(f"blosc2fs {s.version}" in r.stdout, f"-V prints {r.stdout.strip()!r}")
    shutil.copyfile(h.frame(FIXTURE), s.frame)
    info = json.loads(run([binary, "--info", s.frame]).stdout)
    check_equal(info.get("nchunks"), h.expect(FIXTURE)["nchunks"], "--info nchunks of the packaged binary")
    sections = run(["readelf", "-S", "-W", binary]).stdout
    check(".debug_info" not in sections and ".symtab" not in sections, "the packaged binary is not stripped")
    same = [("usr/share/doc/blosc2fs/README.md", "README.md"), ("usr/share/doc/blosc2fs/copyright", "packaging/copyright"),
            ("lib/systemd/system/blosc2fs@.service", "systemd/blosc2fs@.service")]
    same += [(f"usr/share/doc/blosc2fs/examples/{n}", f"systemd/{n}") for n in EXAMPLES]
    same += [(f"usr/share/doc/blosc2fs/docs/{n}", f"docs/{n}") for n in DOCS]
    check("python.md" in DOCS and "preview-demo.png" in DOCS, f"docs/ of the source tree holds {DOCS}")
    # The relative links of the README (docs/x.md, docs/preview-demo.png) and of every page
    # (x.md, ../README.md) resolve in the installed copy.
    doc_root = os.path.join(s.root, "usr/share/doc/blosc2fs")
    pages = ["README.md"] + [f"docs/{n}" for n in DOCS if n.endswith(".md")]
    linked = set()
    for page in pages:
        text = read_file(os.path.join(doc_root, page)).decode()
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https://, mailto:
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(page), target))
            linked.add(path)
            check(os.path.isfile(os.path.join(doc_root, path)),
                  f"the installed {page} links {target}, which the package does not hold")
    check({"docs/preview-demo.png", "docs/python.md", "README.md"} <= linked, f"the pages link {sorted(linked)}")
    for packaged, source in same:
        check(read_file(os.path.join(s.root, packaged)) == read_file(os.path.join(SOURCE_ROOT, source)),
              f"{packaged} differs from {source}")


def test_man_page(h, s):
    check(os.path.isdir(s.root), "the package was not unpacked (see package.extracted_root)")
    with gzip.open(os.path.join(s.root, "usr/share/man/man1/blosc2fs.1.gz"), "rb") as f:
        roff = f.read().decode()
    th = re.search(r'^\.TH BLOSC2FS 1 .*"blosc2fs ([^"]+)"', roff, re.M)
    check(th is not None and th.group(1) == s.version, f"the .TH line does not carry version {s.version}")
    with tempfile.NamedTemporaryFile("w", suffix=".1") as page:
        page.write(roff)
        page.flush()
        r = run(["groff", "-t", "-man", "-Tutf8", "-ww", "-z", page.name])
        check(not r.stderr.strip(), f"groff warns about the man page: {r.stderr.strip()}")
        text = run(["groff", "-t", "-man", "-Tascii", "-P-cbou", "-rLL=200n", page.name]).stdout
    text = re.sub(r"-\n\s*", "-", text)
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_-]*=?", text))
    # Every option `blosc2fs -h` lists is in the man page.
    usage = run([h.binary, "-h"]).stdout
    options = set(re.findall(r"-o ([a-z_]+)", usage))
    options |= set(re.findall(r"^\s+([a-z_]+=)", usage, re.M))
    options |= set(re.findall(r"[ ,]([a-z_]+=)", usage))
    for head in ("passed through:", "Accepted and ignored (fstab):"):
        tail = usage.split(head, 1)[1].split("\n\n", 1)[0].split("Accepted and ignored", 1)[0]
        options |= {w.strip(" .\n") for w in tail.replace("\n", " ").split(",") if w.strip(" .\n")}
    options |= {"-f", "-d", "-s", "-h", "-V", "--info", "--help", "--version"}
    missing = sorted(o for o in options
                     if o.rstrip("=.") and o not in words and o.rstrip("=") not in words and o not in text)
    check(not missing, f"options of blosc2fs -h missing from the man page: {missing}")
    for needed in ("EXIT STATUS", ".blosc2fs-cache", "fuse.blosc2fs", "x-systemd.automount",
                   "16 metalayers", "31 bytes", "crash", "fsync", "4913", "blosc2fs@", "NOTIFY_SOCKET"):
        check(needed in text, f"the man page does not mention {needed!r}")
    statuses = text.split("EXIT STATUS", 1)[1].split("ENVIRONMENT", 1)[0]
    for status in range(8):
        check(re.search(rf"^\s+{status}\s", statuses, re.M), f"exit status {status} is not documented")


def test_maintainer_scripts(h, s):
    deb = s.need_deb()
    control = os.path.join(h.workdir, "control")
    shutil.rmtree(control, ignore_errors=True)
    run(["dpkg-deb", "-e", deb, control])
    for script in ("postinst", "postrm"):
        path = os.path.join(control, script)
        check(os.access(path, os.X_OK), f"{script} is not executable")
        run(["sh", "-n", path])
        # Without systemd as init (this machine, chroots) they do nothing and succeed.
        run([path, "configure" if script == "postinst" else "remove"])


# --- installed on this machine ---

def test_install(h, s):
    deb = s.need_deb()
    r = run(APT_GET + ["install", "-y", "--reinstall", "--allow-downgrades", "--no-install-recommends", deb],
            timeout=APT_LOCK_WAIT + 300, check_rc=False)
    check(r.returncode == 0, f"apt-get install {deb} failed: {(r.stderr or r.stdout).strip()[-2000:]}")
    check(package_installed(), "dpkg does not list blosc2fs as installed")
    check_equal(run(["dpkg-query", "-W", "-f=${Version}", "blosc2fs"]).stdout, s.version, "installed version")
    listed = set(run(["dpkg", "-L", "blosc2fs"]).stdout.split())
    for path in PACKAGE_FILES:
        check("/" + path in listed and os.path.exists("/" + path), f"/{path} is not installed")
    check(read_file("/usr/bin/blosc2fs") == read_file(os.path.join(s.root, "usr/bin/blosc2fs")),
          "/usr/bin/blosc2fs is not the packaged binary")
    # mount.fuse3 runs the daemon by name from sh's default PATH.
    r = run(["env", "-i", "/bin/sh", "-c", "command -v blosc2fs"])
    check_equal(r.stdout.strip(), "/usr/bin/blosc2fs", "blosc2fs in the default PATH")
    if shutil.which("man"):
        r = run(["man", "-w", "blosc2fs"])
        check_equal(r.stdout.strip(), "/usr/share/man/man1/blosc2fs.1.gz", "man -w blosc2fs")


def example_options(name, key):
    with open(os.path.join(SOURCE_ROOT, "systemd", name)) as f:
        for line in f:
            if line.startswith(key + "="):
                return line.split("=", 1)[1].strip()
    raise TestFailure(f"systemd/{name} has no {key}=")


def test_mount_type(h, s):
    check(package_installed(), "the package is not installed (see install.apt)")
    h.require_fuse()
    if not os.path.exists(s.frame):
        shutil.copyfile(h.frame(FIXTURE), s.frame)
    mnt = h.new_dir()
    options = example_options("data-x.mount", "Options")  # what the example .mount unit passes
    check("ro" in options.split(","), f"the example mount unit is not read-only: {options}")
    run(["mount", "-t", "fuse.blosc2fs", s.frame, mnt, "-o", options], timeout=60)
    check(os.path.ismount(mnt), f"mount -t fuse.blosc2fs returned 0 but {mnt} is not mounted")
    register_mount(h, mnt)
    entry = mount_entry(mnt)
    check(entry is not None, f"{mnt} is not in /proc/mounts")
    check_equal(entry[0], s.frame, "source in /proc/mounts")
    check_equal(entry[2], "fuse.blosc2fs", "type in /proc/mounts")
    check("ro" in entry[3].split(","), f"not mounted read-only: {entry[3]}")
    check_mounted_tree(h, mnt)
    unmount_and_wait_daemon(h, mnt, [FUSERMOUNT, "-u"])


def test_fstab_line(h, s, collection=False):
    check(package_installed(), "the package is not installed (see install.apt)")
    h.require_fuse()
    if not os.path.exists(s.frame):
        shutil.copyfile(h.frame(FIXTURE), s.frame)
    place = make_collection(h) if collection else s.frame
    mnt = h.new_dir()
    fstab = os.path.join(h.workdir, "fstab")
    with open(fstab, "w") as f:  # product.md's line, with this test's paths
        f.write(f"{place}  {mnt}  fuse.blosc2fs  ro,noauto,x-systemd.automount,nofail,_netdev  0 0\n")
    run(["mount", "-T", fstab, mnt], timeout=60)
    check(os.path.ismount(mnt), f"mount -T {fstab} {mnt} returned 0 but nothing is mounted")
    register_mount(h, mnt)
    check_equal(mount_entry(mnt)[2], "fuse.blosc2fs", "type in /proc/mounts")
    check_equal(mount_entry(mnt)[0], place, "source in /proc/mounts")
    (check_collection_tree if collection else check_mounted_tree)(h, mnt)
    unmount_and_wait_daemon(h, mnt, ["umount"])  # as systemd stops a .mount unit


def test_mount_failures(h, s):
    check(package_installed(), "the package is not installed (see install.apt)")
    h.require_fuse()
    if not os.path.exists(s.frame):
        shutil.copyfile(h.frame(FIXTURE), s.frame)
    not_frame = os.path.join(h.workdir, "not-a-frame")
    with open(not_frame, "w") as f:
        f.write("hello\n")
    mnt = h.new_dir()
    cases = [
        ("a missing frame", [os.path.join(h.workdir, "missing.b2frame"), mnt, "-o", "ro"], 2),
        ("not a frame", [not_frame, mnt, "-o", "ro"], 3),
        ("a missing mount point", [s.frame, os.path.join(h.workdir, "no-such-dir"), "-o", "ro"], 4),
        ("an unknown option", [s.frame, mnt, "-o", "ro,no_such_option"], 1),
    ]
    for what, args, status in cases:
        r = run(["mount", "-t", "fuse.blosc2fs"] + args, timeout=60, check_rc=False)
        check_equal(r.returncode, status, f"mount's exit status for {what}")
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        check(len(lines) == 1 and lines[0].startswith("blosc2fs: "),
              f"{what}: want one 'blosc2fs: ...' line, got {r.stderr!r}")
        check(not os.path.ismount(mnt), f"{what}: {mnt} got mounted")


# --- systemd ---

def test_units_verify(h, s):
    check(package_installed(), "the package is not installed (see install.apt)")
    man = "--man=yes" if shutil.which("man") else "--man=no"
    if man == "--man=no":
        print("  man(1) is not installed: Documentation= is not checked", flush=True)
    units = os.path.join(h.workdir, "units")
    os.makedirs(units, exist_ok=True)
    instance = run(["systemd-escape", "--path", "/mnt/x"]).stdout.strip()
    named = os.path.join(units, f"blosc2fs@{instance}.service")
    shutil.copyfile(os.path.join(UNIT_DIR, "blosc2fs@.service"), named)
    checks = [[os.path.join(UNIT_DIR, "blosc2fs@.service")], [named],
              [os.path.join(DOC_DIR, "examples", "data-x.mount")],
              [os.path.join(DOC_DIR, "examples", "data-x.automount"),
               os.path.join(DOC_DIR, "examples", "data-x.mount")]]
    for paths in checks:
        r = run(["systemd-analyze", "verify", man] + paths, timeout=120, check_rc=False)
        out = (r.stdout + r.stderr).strip()
        check(r.returncode == 0 and not out,
              f"systemd-analyze verify {' '.join(paths)}: status {r.returncode}: {out}")


def expand_exec(line, env, specifiers):
    """Expands a unit's command line as systemd does: %x specifiers, "$VAR" as a
    whole word into its whitespace-split words, ${VAR} inside a word, $$ -> $."""
    for key, value in specifiers.items():
        line = line.replace("%" + key, value)
    words = []
    for word in shlex.split(line):
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            words += env.get(m.group(1), "").split()
            continue
        word = re.sub(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda g: env.get(g.group(1), ""), word)
        words.append(word.replace("$$", "$"))
    prefix = words[0].lstrip("-@:+!")
    return [prefix] + words[1:]


def unit_lines(key):
    with open(os.path.join(UNIT_DIR, "blosc2fs@.service")) as f:
        return [line.split("=", 1)[1].strip() for line in f if line.startswith(key + "=")]


def test_service_emulated(h, s):
    """Runs blosc2fs@.service's commands the way systemd does, with a
    NOTIFY_SOCKET (abstract namespace) to receive READY=1 and STOPPING=1."""
    check(package_installed(), "the package is not installed (see install.apt)")
    h.require_fuse()
    if not os.path.exists(s.frame):
        shutil.copyfile(h.frame(FIXTURE), s.frame)
    mnt = os.path.join(h.workdir, "service-mnt")  # created by the unit's ExecStartPre
    instance = run(["systemd-escape", "--path", mnt]).stdout.strip()
    specifiers = {"i": instance, "f": mnt, "I": mnt[1:]}
    env = {"FRAME": "", "OPTIONS": ""}
    # Without FRAME the guard stops the start with a clear message.
    pre = [expand_exec(line, env, specifiers) for line in unit_lines("ExecStartPre")]
    check(pre, "blosc2fs@.service has no ExecStartPre")
    r = run(pre[0], env=dict(ENV, **env), check_rc=False)
    check(r.returncode != 0 and "FRAME" in r.stderr, f"the FRAME guard did not stop the start: {r.stderr!r}")
    # The example configuration, with this test's frame.
    run_service(h, s.frame, example_options("mnt-x.conf", "OPTIONS"), mnt, specifiers)


def test_service_with_url(h, s):
    """The unit with FRAME a URL: the frame from a web server, read-only; a
    server that cannot be reached is exit status 7, which the unit retries."""
    check(package_installed(), "the package is not installed (see install.apt)")
    h.require_fuse()
    if not os.path.exists(s.frame):
        shutil.copyfile(h.frame(FIXTURE), s.frame)
    mnt = os.path.join(h.workdir, "service-url-mnt")
    instance = run(["systemd-escape", "--path", mnt]).stdout.strip()
    specifiers = {"i": instance, "f": mnt, "I": mnt[1:]}
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    env = {"FRAME": f"http://127.0.0.1:{closed}/{os.path.basename(s.frame)}", "OPTIONS": "-o connect_timeout=2,retries=1"}
    (start,) = [expand_exec(line, env, specifiers) for line in unit_lines("ExecStart")]
    run(["mkdir", "-p", mnt])
    r = run(start, env=dict(ENV, **env), check_rc=False, timeout=120)
    check_equal(r.returncode, 7, f"an unreachable server: exit status ({r.stderr.strip()})")
    prevented = " ".join(unit_lines("RestartPreventExitStatus")).split()
    check("7" not in prevented, f"RestartPreventExitStatus {prevented} would not retry an unreachable server")
    with Nginx(os.path.dirname(s.frame), os.path.join(h.workdir, "service-nginx")) as nginx:
        run_service(h, f"{nginx.url}/{os.path.basename(s.frame)}", "", mnt, specifiers)


def test_service_with_collection(h, s):
    """The unit with FRAME a local folder of datasets (a collection), with the
    example configuration's options: READY=1, the tree, SIGTERM."""
    check(package_installed(), "the package is not installed (see install.apt)")
    h.require_fuse()
    mnt = os.path.join(h.workdir, "service-collection-mnt")
    instance = run(["systemd-escape", "--path", mnt]).stdout.strip()
    specifiers = {"i": instance, "f": mnt, "I": mnt[1:]}
    run_service(h, make_collection(h), example_options("mnt-x.conf", "OPTIONS"), mnt, specifiers,
                check_collection_tree)


def run_service(h, frame, options, mnt, specifiers, check_tree=check_mounted_tree):
    """ExecStartPre, ExecStart until READY=1, the tree, SIGTERM, STOPPING=1, ExecStopPost."""
    env = {"FRAME": frame, "OPTIONS": options}
    for command in [expand_exec(line, env, specifiers) for line in unit_lines("ExecStartPre")]:
        run(command, env=dict(ENV, **env))
    (start,) = [expand_exec(line, env, specifiers) for line in unit_lines("ExecStart")]
    check(start[0] == "/usr/bin/blosc2fs" and "-f" in start, f"ExecStart is {start}")

    address = f"@blosc2fs-test-packaging-{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind("\0" + address[1:])
    log_path = os.path.join(h.workdir, "service.log")
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(start, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  env=dict(ENV, NOTIFY_SOCKET=address, **env))
    messages = []
    try:
        listener.settimeout(0.2)
        deadline = time.time() + PATIENCE
        while "READY=1" not in messages and time.time() < deadline and daemon.poll() is None:
            try:
                messages += listener.recv(4096).decode().split("\n")
            except socket.timeout:
                pass
        if "READY=1" not in messages:
            with open(log_path) as f:
                log_text = f.read().strip()[-1500:]
            raise TestFailure(f"no READY=1 from {' '.join(start)} within {PATIENCE} s (exit status "
                              f"{daemon.poll()}, mounted: {os.path.ismount(mnt)}, got {messages}): {log_text}")
        check(os.path.ismount(mnt), "READY=1 came before the mount was there")
        register_mount(h, mnt)
        check_tree(h, mnt)
        daemon.send_signal(signal.SIGTERM)  # what systemctl stop does
        status = daemon.wait(timeout=30)
        h.mounts.pop(mnt, None)
        check_equal(status, 0, "exit status after SIGTERM")
        check(wait_until(lambda: not os.path.ismount(mnt)), "still mounted after the daemon exited")
        listener.settimeout(1)
        try:
            while True:
                messages += listener.recv(4096).decode().split("\n")
        except (socket.timeout, BlockingIOError):
            pass
        check("STOPPING=1" in messages, f"no STOPPING=1 before exit (got {messages})")
    finally:
        listener.close()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=30)
        for command in [expand_exec(line, env, specifiers) for line in unit_lines("ExecStopPost")]:
            subprocess.run(command, capture_output=True, timeout=30)
        check(not os.path.ismount(mnt), "ExecStopPost left the mount behind")


def test_desktop_files(h, s):
    """The MIME XML and the thumbnailer as installed: shared-mime-info's trigger has run
    update-mime-database (the system's database knows the types), GLib names the type of a
    renamed b2nd by its magic, and the installed .thumbnailer's Exec line makes a PNG."""
    for path in ("usr/share/mime/packages/blosc2fs.xml", "usr/share/thumbnailers/blosc2.thumbnailer"):
        check(read_file("/" + path) == read_file(os.path.join(SOURCE_ROOT, "packaging", "desktop",
                                                              os.path.basename(path))),
              f"/{path} is not the source tree's file")
    for mime in MIME_TYPES:
        check(os.path.exists(f"/usr/share/mime/{mime}.xml"),
              f"/usr/share/mime/{mime}.xml is missing: shared-mime-info's trigger did not register the types")
    work = os.path.join(h.workdir, "desktop")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    renamed = os.path.join(work, "array.bin")
    shutil.copyfile(h.frame("b2nd-3d-f8.b2nd"), renamed)
    env = dict(ENV, XDG_DATA_HOME=os.path.join(work, "no-data-home"), XDG_DATA_DIRS="/usr/share")
    r = run(["gio", "info", "-a", "standard::content-type", renamed], env=env)
    check("standard::content-type: application/x-blosc2-b2nd" in r.stdout,
          f"gio info of a renamed b2nd with the system's database: {r.stdout.strip()}")
    exec_line = None
    with open("/usr/share/thumbnailers/blosc2.thumbnailer") as f:
        for line in f:
            if line.startswith("Exec="):
                exec_line = line[len("Exec="):].strip()
    check(exec_line is not None, "the installed .thumbnailer has no Exec line")
    out = os.path.join(work, "thumb.png")
    fields = {"%i": renamed, "%o": out, "%s": "128"}
    argv = [fields.get(word, word) for word in exec_line.split()]
    run(argv, env=dict(ENV, PATH="/usr/bin:/bin"))
    png = read_file(out)
    check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{exec_line}: the output is not a PNG")


def test_remove(h, s):
    if s.was_installed:
        print("  blosc2fs was installed before this test: left installed (now this build's package)",
              flush=True)
        return
    if not package_installed():
        raise TestFailure("the package is not installed (see install.apt)")
    run(APT_GET + ["purge", "-y", "blosc2fs"], timeout=APT_LOCK_WAIT + 300)
    check(not package_installed(), "blosc2fs is still installed")
    for path in PACKAGE_FILES:
        check(not os.path.exists("/" + path), f"/{path} is still there after apt-get purge")
    # shared-mime-info's trigger ran again: the types are gone from the system's database.
    for mime in MIME_TYPES:
        check(not os.path.exists(f"/usr/share/mime/{mime}.xml"),
              f"/usr/share/mime/{mime}.xml is still there after apt-get purge")


def main():
    h = Harness("the Debian package, mount helper and systemd units", watchdog_seconds=900)
    s = State(h)
    print(f"build tree: {s.build_dir}", flush=True)
    h.test("tools", test_tools, h, s)
    h.test("package.build", test_build, h, s)
    h.test("package.control", test_control, h, s)
    h.test("package.contents", test_contents, h, s)
    h.test("package.extracted_root", test_extracted_root, h, s)
    h.test("package.copyright", test_copyright, h, s)
    h.test("package.man_page", test_man_page, h, s)
    h.test("package.maintainer_scripts", test_maintainer_scripts, h, s)
    h.test("install.apt", test_install, h, s)
    try:
        h.test("desktop.mime_and_thumbnailer", test_desktop_files, h, s)
        h.test("mount.type_fuse_blosc2fs", test_mount_type, h, s)
        h.test("mount.fstab_line", test_fstab_line, h, s)
        h.test("mount.fstab_line_collection", test_fstab_line, h, s, True)
        h.test("mount.failures", test_mount_failures, h, s)
        h.test("systemd.verify", test_units_verify, h, s)
        h.test("systemd.service_emulated", test_service_emulated, h, s)
        h.test("systemd.service_with_url", test_service_with_url, h, s)
        h.test("systemd.service_with_collection", test_service_with_collection, h, s)
    finally:
        h.test("install.remove", test_remove, h, s)
    h.finish()


if __name__ == "__main__":
    main()
