"""Adds to a wheel that auditwheel repaired the licenses of the libraries it
vendored, taken from the Debian packages they came from (scripts/wheel.sh).

For each blosc2fs.libs/NAME it finds the Debian package holding that library on
this machine (dpkg-query -S) and puts the package's copyright file in
blosc2fs-VERSION.dist-info/licenses/vendored/PACKAGE.copyright, plus
vendored.txt: which file came from which binary package, version and source
package (the source Debian publishes for that version, which LGPL-2.1 libfuse's
terms point users to). METADATA gets a License-File line for each, RECORD is
rewritten. Usage: python vendored_licenses.py WHEEL (rewritten in place).
"""

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

LIBRARY_DIRS = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib", "/lib"]


def dpkg_query(*args):
    return subprocess.run(["dpkg-query"] + list(args), capture_output=True, text=True, check=True).stdout


def package_of(vendored_name):
    """(library file, binary package) of a vendored blosc2fs.libs/ file name:
    auditwheel names the copy of NAME.so.X (or NAME.5.so.X) NAME-HASH.so.X."""
    original = re.sub(r"^([^.]*)-[0-9a-f]{8}\.", r"\1.", vendored_name)
    for directory in LIBRARY_DIRS:
        path = os.path.join(directory, original)
        if os.path.exists(path):
            break
    else:
        raise SystemExit(f"vendored_licenses.py: no {original} on this machine (for {vendored_name})")
    real = os.path.realpath(path)
    for candidate in (path, real, "/usr" + real if not real.startswith("/usr/") else real[4:]):
        r = subprocess.run(["dpkg-query", "-S", candidate], capture_output=True, text=True)
        if r.returncode == 0:
            return original, r.stdout.split(":", 1)[0].strip()
    raise SystemExit(f"vendored_licenses.py: no Debian package holds {path}")


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main():
    wheel = sys.argv[1]
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
        contents = {info.filename: z.read(info) for info in infos}
    dist_info = next(n.split("/")[0] for n in contents if n.split("/")[0].endswith(".dist-info"))
    libs = sorted(n.split("/", 1)[1] for n in contents if n.startswith("blosc2fs.libs/") and not n.endswith("/"))
    if not libs:
        raise SystemExit("vendored_licenses.py: the wheel vendors no library: was it repaired?")

    added = {}
    table = ["# What auditwheel vendored into blosc2fs.libs/ and where it came from: a Debian bookworm",
             "# binary package (its copyright file is PACKAGE.copyright here) and its source package,",
             "# whose source Debian publishes for that version (apt-get source SOURCE=VERSION).",
             "# vendored file\toriginal\tbinary package\tversion\tsource package"]
    for lib in libs:
        original, package = package_of(lib)
        name = package.split(":")[0]
        version, source = dpkg_query("-W", "-f=${Version}\t${source:Package} ${source:Version}", package).split("\t")
        table.append(f"{lib}\t{original}\t{name}\t{version}\t{source}")
        copyright_path = f"{dist_info}/licenses/vendored/{name}.copyright"
        if copyright_path not in added:
            with open(f"/usr/share/doc/{name}/copyright", "rb") as f:
                added[copyright_path] = f.read()
    added[f"{dist_info}/licenses/vendored/vendored.txt"] = ("\n".join(table) + "\n").encode()

    metadata_name = f"{dist_info}/METADATA"
    metadata = contents[metadata_name].decode()
    head, sep, body = metadata.partition("\n\n")
    lines = [line for line in head.split("\n") if not line.startswith("License-File: vendored/")]
    lines += [f"License-File: {path.split('/licenses/', 1)[1]}" for path in sorted(added)]
    contents[metadata_name] = ("\n".join(lines) + sep + body).encode()

    record_name = f"{dist_info}/RECORD"
    names = [info.filename for info in infos if info.filename != record_name]
    names += [path for path in sorted(added) if path not in contents]
    contents.update(added)
    record = [record_line(n, contents[n]) for n in names if not n.endswith("/")] + [f"{record_name},,"]
    contents[record_name] = ("\n".join(record) + "\n").encode()

    by_name = {info.filename: info for info in infos}
    temporary = wheel + ".tmp"
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as out:
        for n in names + [record_name]:
            info = by_name.get(n)
            if info is None:
                info = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(info, contents[n])
    os.replace(temporary, wheel)
    print(f"licenses of {len(libs)} vendored libraries from {len(added) - 1} Debian packages added to "
          f"{os.path.basename(wheel)}")


if __name__ == "__main__":
    main()
