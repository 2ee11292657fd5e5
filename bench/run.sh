#!/usr/bin/env bash
# The blosc2fs benchmark: builds what it needs, makes its data sets once (reused
# from the scratch directory), and prints one markdown table comparing each
# blosc2fs figure with the same work done in-process by the project's library
# and, where squashfs can do that work, with squashfuse_ll on a squashfs image
# of the same uncompressed bytes. Needs root (drops the page cache).
#
#   bench/run.sh [--quick] [--runs N] [--no-build] [--prepare] [--read-ahead KB] [--only GROUPS] [BUILD_DIR]
#
# --quick: small data sets (128 MB), one run each: for trying the script out.
# --only GROUPS: these groups of rows alone, comma-separated, out of reads,
#   random, ls, mount, cp, vlmeta, store, codecs, remote, caterva2, collections, zarr, array-writes, io_uring, dask,
#   remote-slices (only their data sets are made).
#   io_uring: the same work over FUSE over io_uring (-o io_uring=on) and through /dev/fuse (=off) in one run,
#   taking turns, at least 7 rounds (bench/io_uring.py, the test venv's python; switches the kernel's
#   enable_uring on and puts back what it found): 2,000 small chunk files first read, `ls -l` of 10,000
#   chunks, 2,000 vlmeta/ files of a collection, zarr-python whole 2,000^2 and 512 MB reads and the
#   8,000^2 slice and column (beside python-blosc2), `cat data` of a 512 MB frame.
#   array-writes: array.npy written as an array (bench/array_writes.py, the test venv's python-blosc2): a 64 MiB
#   slab assigned through np.lib.format.open_memmap of a SIZE_MB float32 array against python-blosc2's
#   arr[a:b] = v, cp of a SIZE_MB/2 .npy into array.npy against blosc2.asarray(np.load(...)), the daemon's RSS.
#   collections: a local folder of 10,000 small python-blosc2 arrays mounted as one
#   collection (mount, ls, cat of every vlmeta/NAME beside python-blosc2, RSS), and
#   1,000 of them under a SeaweedFS prefix (mount, requests of one array.npy) (bench/collection_mounts.py).
#   caterva2: a loopback cat2-server (bench/caterva2.py, BUILD/venv-caterva2): cold
#   sequential read of a 256 MB dataset through a tree mount against python-blosc2's
#   C2Array[:] on the same server, and a root of 10,000 datasets mounted and listed.
#   remote: URL mounts from a loopback nginx (bench/remote.py, the test venv's
#   python-blosc2 and the tests' servers): cold reads beside a local mount, 20 ms
#   per request against one chunk at a time and python-blosc2, a warm disk
#   cache, the memory of 16 parallel readers; and a 512 MB noisy float32 frame
#   (mkframe, compressing 1.4x) from nginx, from SeaweedFS's S3 and from a warm
#   disk cache, `cat raw/*` and curl's whole-object fetch, each against the
#   local mount of the same file in the same rounds.
#   dask: a dask.distributed LocalCluster reading a SeaweedFS prefix of four float64 arrays (SIZE_MB/4) through
#   blosc2fs.dask.MountPlugin (bench/dask_cluster.py): xarray's sum() over the collection's Zarr group, cold, with 1
#   and 2 worker processes, against python-blosc2's sum() of the local files in-process.
#   remote-slices: sub-arrays of a remote 8,000 x 8,000 float32 array (bench/remote_slices.py) through the Zarr
#   view by zarr-python against python-blosc2 opening the same URL: bytes and requests from nginx's log or a
#   counting proxy before SeaweedFS, times on loopback and behind a proxy adding 20 ms to every request.
#   zarr: the Zarr view (bench/zarr_view.py): zarr-python slices of an 8,000 x 8,000 array
#   and whole arrays against python-blosc2 in-process and a zstd Zarr copy on disk,
#   dask's mean, and the requests of one chunk from nginx.
#   codecs: single-threaded decoding of python-blosc2's plugin-codec frames
#   (bench/plugin_codecs.py), codec_bench beside python-blosc2, both on one CPU;
#   and `cat data` of a 512 MB OpenZL (SH_BD_ZSTD) float32 frame through a mount
#   (the blosc2-openzl plugin loaded by the daemon) against python-blosc2's [:].
# --no-build: use the binaries already in BUILD_DIR as they are.
# --prepare: make the data sets, then stop.
# --read-ahead KB: the kernel's readahead of every FUSE mount, blosc2fs
#   (-o read_ahead) and squashfuse_ll alike. Without it each runs as shipped:
#   blosc2fs sets 4096 KB itself, squashfuse_ll keeps the kernel's 128 KB.
# BLOSC2FS_BENCH_DIR: scratch directory (default /var/tmp/blosc2fs-bench).
# Each figure is the median of N runs (default 3); cold runs drop the page
# cache and mount afresh, so the chunk cache starts empty.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
RUNS=3
BUILD_IT=1
PREPARE_ONLY=0
READ_AHEAD_KB=""
ONLY=""
BUILD=""
while (($#)); do
  case "$1" in
    --quick) QUICK=1 ;;
    --runs) RUNS=$2; shift ;;
    --no-build) BUILD_IT=0 ;;
    --prepare) PREPARE_ONLY=1 ;;
    --read-ahead) READ_AHEAD_KB=$2; shift ;;
    --only) ONLY=$2; shift ;;
    -h|--help) sed -n '2,55p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench/run.sh: unknown option $1" >&2; exit 1 ;;
    *) BUILD=$1 ;;
  esac
  shift
done
BUILD=$(realpath -m "${BUILD:-$ROOT/build-bench}")
SCRATCH=${BLOSC2FS_BENCH_DIR:-/var/tmp/blosc2fs-bench}
# wants GROUP: whether this run measures that group of rows (--only).
wants() { [[ -z $ONLY || ,$ONLY, == *,$1,* ]]; }
for g in ${ONLY//,/ }; do
  case $g in reads | random | ls | mount | cp | vlmeta | store | codecs | remote | caterva2 | collections | zarr | array-writes | io_uring | dask | remote-slices) ;; *) echo "bench/run.sh: unknown group $g in --only" >&2; exit 1 ;; esac
done

if ((QUICK)); then
  SIZE_MB=128; TEXT_MB=64; CP_MB=64; NREADS=4000; ((RUNS == 3)) && RUNS=1
else
  SIZE_MB=1024; TEXT_MB=512; CP_MB=512; NREADS=20000
fi
LS_CHUNKS=100000
MOUNT_CHUNKS=1000000

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root: cold reads drop the page cache (/proc/sys/vm/drop_caches)"
[[ -e /dev/fuse ]] || die "/dev/fuse is missing"

# --- tools -------------------------------------------------------------------

need_packages() {
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
  ((${#missing[@]} == 0)) && return
  log "installing ${missing[*]}"
  source "$ROOT/scripts/apt.sh"
  apt_get install -y -qq "${missing[@]}" >/dev/null || { apt_get update -qq && apt_get install -y -qq "${missing[@]}" >/dev/null; }
}
need_packages fuse3 cmake g++ pkg-config
if wants reads || wants random || wants ls || wants cp || wants vlmeta; then need_packages squashfuse squashfs-tools strace; fi
if wants store || wants codecs || wants remote || wants caterva2 || wants collections || wants zarr || wants array-writes ||
  wants io_uring || wants dask || wants remote-slices; then need_packages python3-venv; fi
{ wants remote || wants remote-slices; } && need_packages nginx-light

if ((BUILD_IT)); then
  if [[ ! -f $BUILD/CMakeCache.txt ]]; then
    log "configuring $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBLOSC2FS_TESTS=OFF >/dev/null
  fi
  targets=(blosc2fs mkframe fsbench)
  wants codecs && targets+=(codec_bench)
  log "building ${targets[*]} in $BUILD"
  cmake --build "$BUILD" -j2 --target "${targets[@]}" >/dev/null || die "build failed (cmake --build $BUILD)"
fi
BLOSC2FS=$BUILD/src/fs/blosc2fs
MKFRAME=$BUILD/bench/mkframe
FSBENCH=$BUILD/bench/fsbench
CODEC_BENCH=$BUILD/bench/codec_bench
for b in "$BLOSC2FS" "$MKFRAME" "$FSBENCH"; do [[ -x $b ]] || die "$b is missing (build it, or drop --no-build)"; done
if wants codecs; then [[ -x $CODEC_BENCH ]] || die "$CODEC_BENCH is missing (build it, or drop --no-build)"; fi

# --- mounts: always unmounted, whatever happens --------------------------------

MNT=$SCRATCH/mnt
SHM_COPY=/dev/shm/blosc2fs-bench-warm.raw  # a tmpfs copy of a data set, while it is read
mkdir -p "$SCRATCH/data" "$MNT"/{b2,sq,new}
cleanup() {
  for m in "$MNT"/b2 "$MNT"/sq "$MNT"/new; do
    if mountpoint -q "$m" 2>/dev/null; then fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true; fi
  done
  rm -rf "$SCRATCH/work" "$SHM_COPY"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# Share of all CPU time that was busy (anything: other builds, us) over one second.
cpu_busy_percent() {
  local a b
  a=$(head -1 /proc/stat); sleep 1; b=$(head -1 /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x); split(b, y); t = 0
    for (i = 2; i <= 9; i++) t += y[i] - x[i]
    idle = y[5] - x[5] + y[6] - x[6]
    printf "%.0f", (t > 0 ? 100 * (t - idle) / t : 0) }'
}
# Before each group of measurements, waits (up to 60 s) for the machine to be
# idle, since other work on 2 cores moves every figure; records what it saw.
BUSY_SEEN=()
wait_quiet() {
  local busy
  for _ in $(seq 60); do
    busy=$(cpu_busy_percent)
    ((busy < 10)) && break
  done
  ((busy < 10)) || log "measuring although the CPUs are $busy% busy with other work"
  BUSY_SEEN+=("$busy")
}
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
# The value of key=... in a line of fsbench output.
kv() { grep -o "\b$1=[^ ]*" <<<"$2" | head -1 | cut -d= -f2; }
# "median (min–max)" of several figures, or just the figure when there is one;
# spread_d: the same with D decimals.
spread() { spread_d 0 "$@"; }
spread_d() {
  local d=$1 m lo hi
  shift
  m=$(fmt "$(median "$@")" "$d")
  (($# > 1)) || { echo "$m"; return; }
  lo=$(printf '%s\n' "$@" | sort -g | head -1) hi=$(printf '%s\n' "$@" | sort -g | tail -1)
  echo "$m ($(fmt "$lo" "$d")–$(fmt "$hi" "$d"))"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fmt() { awk -v v="$1" -v d="${2:-0}" 'BEGIN { if (v == "" || v == "nan") print "n/a"; else printf "%.*f", d, v }'; }

# The serving process of a mount: the one whose command line ends in it.
daemon_pid() { pgrep -n -f -- " $1\$" || die "no daemon process found for $1"; }

# A FUSE mount's readahead lives in its backing device info, named after the
# anonymous device number of the mount.
set_read_ahead() {
  [[ -n $READ_AHEAD_KB ]] || return 0
  local dev
  dev=$(stat -c %d "$1")
  echo "$READ_AHEAD_KB" >"/sys/class/bdi/$((dev >> 8)):$((dev & 255))/read_ahead_kb"
}

# Runs a mount command, retrying twice: other work on the machine (tests that
# hide /dev/fuse to check the error path, say) can make one attempt fail.
mount_retrying() {
  local try
  for try in 1 2 3; do
    "$@" && return 0
    ((try < 3)) && { log "mount failed (attempt $try): $*; retrying"; sleep 2; }
  done
  return 1
}

mount_b2() {  # mount_b2 FRAME MOUNTPOINT [OPTIONS...]
  local frame=$1 mnt=$2
  shift 2
  # blosc2fs sets its own window when the first file is opened (-o read_ahead).
  local ra=()
  [[ -n $READ_AHEAD_KB ]] && ra=(-o "read_ahead=${READ_AHEAD_KB}K")
  mount_retrying "$BLOSC2FS" "${ra[@]}" "$@" "$frame" "$mnt"
}

mount_sq() {  # mount_sq IMAGE MOUNTPOINT
  mount_retrying squashfuse_ll "$1" "$2" && set_read_ahead "$2"
}

# Unmounts and waits until the daemon has exited, so that "unmounted" means
# its last writes are done.
unmount_wait() {
  local mnt=$1 pid
  pid=$(pgrep -n -f -- " $mnt\$" || true)
  fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
  if [[ -n $pid ]]; then
    for _ in $(seq 6000); do
      # Exited: gone, or a zombie that this machine's init has not reaped yet
      # (that can take a second or two, which is not the daemon's time).
      case $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) in "" | Z | X) return 0 ;; esac
      sleep 0.01
    done
    log "warning: daemon $pid still running 60 s after unmounting $mnt"
  fi
}

proc_io() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/io"; }
proc_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
CLK_TCK=$(getconf CLK_TCK)
# tmpfs at /dev/shm with room for FILE and 1 GB to spare.
shm_has_room() {
  [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]] || return 1
  local need free
  need=$(($(stat -c %s "$1") + (1 << 30)))
  free=$(($(stat -f -c '%a * %S' /dev/shm)))
  ((free > need))
}

# --- data sets -------------------------------------------------------------------

DATA=$SCRATCH/data
# name -> "mkframe arguments|squashfs block size|description"
declare -A SETS=(
  [f32]="float32-zstd $SIZE_MB 1024|128K|noisy float32, zstd, 1 MB chunks, $SIZE_MB MB"
  [f64]="float64-lz4 $SIZE_MB 256|128K|smooth float64, lz4, 256 KB chunks, $SIZE_MB MB"
  [txt]="text-blosclz $TEXT_MB 8192|128K|text, blosclz, 8 MB chunks, $TEXT_MB MB"
  [rnd]="float32-zstd $SIZE_MB 4096 --blocksize 64|64K|noisy float32, zstd, 4 MB chunks, 64 KB blocks, $SIZE_MB MB"
)
SET_ORDER=(f32 f64 txt rnd)
set_frame() { echo "$DATA/$1-$SIZE_MB.b2frame"; }
set_raw() { echo "$DATA/$1-$SIZE_MB.raw"; }
set_sqfs() { echo "$DATA/$1-$SIZE_MB.sqfs"; }
set_desc() { cut -d'|' -f3 <<<"${SETS[$1]}"; }

make_set() {
  local name=$1 args sqblock frame raw sqfs
  args=$(cut -d'|' -f1 <<<"${SETS[$name]}")
  sqblock=$(cut -d'|' -f2 <<<"${SETS[$name]}")
  frame=$(set_frame "$name") raw=$(set_raw "$name") sqfs=$(set_sqfs "$name")
  local kind rest
  read -r kind rest <<<"$args"
  if [[ ! -f $frame ]]; then
    log "making $frame"
    rm -f "$frame.tmp"
    # shellcheck disable=SC2086
    "$MKFRAME" "$kind" "$frame.tmp" $rest && mv "$frame.tmp" "$frame"
  fi
  if [[ ! -f $raw ]]; then
    log "writing its uncompressed bytes to $raw"
    rm -f "$raw.tmp"
    "$FSBENCH" dump "$frame" "$raw.tmp" >/dev/null && mv "$raw.tmp" "$raw"
  fi
  if [[ ! -f $sqfs ]]; then
    # zstd level 7 is what the frames' clevel 5 means for zstd (stream_codecs.cc).
    log "making $sqfs (mksquashfs -comp zstd -Xcompression-level 7 -b $sqblock)"
    rm -f "$sqfs.tmp"
    mksquashfs "$raw" "$sqfs.tmp" -comp zstd -Xcompression-level 7 -b "$sqblock" -noappend -quiet -no-progress \
      >/dev/null && mv "$sqfs.tmp" "$sqfs"
  fi
}

MANY_LS=$DATA/many-$LS_CHUNKS.b2frame
MANY_LS_SQFS=$DATA/many-$LS_CHUNKS.sqfs
MANY_MOUNT=$DATA/many-$MOUNT_CHUNKS.b2frame
CP_SRC=$DATA/cp-src-$CP_MB.raw

make_many() {
  local frame=$1 n=$2
  [[ -f $frame ]] && return
  log "making $frame ($n chunks)"
  rm -f "$frame.tmp"
  "$MKFRAME" many-chunks "$frame.tmp" "$n" && mv "$frame.tmp" "$frame"
}

if wants reads || wants random || wants cp || wants vlmeta; then
  for s in "${SET_ORDER[@]}"; do make_set "$s"; done
fi
wants ls && make_many "$MANY_LS" "$LS_CHUNKS"
wants mount && make_many "$MANY_MOUNT" "$MOUNT_CHUNKS"
if wants ls && [[ ! -f $MANY_LS_SQFS ]]; then
  log "making $MANY_LS_SQFS (the same $LS_CHUNKS chunks as files)"
  # 100,000 small files: in memory when there is a tmpfs (removing them from a
  # disk file system can take minutes).
  files=$DATA/many-ls.files
  [[ -d /dev/shm && -w /dev/shm ]] && files=/dev/shm/blosc2fs-bench-many-ls.files
  rm -rf "$files" "$MANY_LS_SQFS.tmp"
  "$FSBENCH" export-chunks "$MANY_LS" "$files" >/dev/null
  mksquashfs "$files" "$MANY_LS_SQFS.tmp" -comp zstd -noappend -quiet -no-progress >/dev/null
  mv "$MANY_LS_SQFS.tmp" "$MANY_LS_SQFS"
  rm -rf "$files"
fi
# A python-blosc2 TreeStore of many leaves, as .b2d and .b2z (bench/mkstore.py:
# nested groups, every other leaf embedded in embed.b2e), made by the test
# venv's pinned python-blosc2.
STORE_LEAVES=10000
# The store mounts' cache budget: what the memory rows are held to.
STORE_CACHE_MB=64
store_path() { echo "$DATA/store-$STORE_LEAVES.$1"; }
STORE_WHY=""  # why the store rows cannot be measured, when they cannot
make_stores() {
  local f
  for f in b2d b2z; do
    [[ -e $(store_path "$f") ]] && continue
    if ! "$ROOT/scripts/test-venv.sh" "$BUILD" >&2; then
      STORE_WHY="no python-blosc2 to make the store with (scripts/test-venv.sh $BUILD failed)"
      return
    fi
    log "making $(store_path "$f") ($STORE_LEAVES leaves, python-blosc2)"
    "$BUILD/venv/bin/python" "$ROOT/bench/mkstore.py" "$(store_path "$f")" "$STORE_LEAVES" >/dev/null ||
      { STORE_WHY="bench/mkstore.py failed"; return; }
  done
}
wants store && make_stores
# One frame per plugin codec or filter, written by python-blosc2 (bench/plugin_codecs.py),
# and beside each its chunks as python-blosc2 decodes them, for codec_bench to check.
CODECS_PY=""     # a python with python-blosc2 and the J2K/HTJ2K plugins
CODECS_NOTE=""   # where that python's plugins came from, when not from the test venv
CODECS_WHY=""    # why the codecs rows cannot be measured, when they cannot
CODECS_LIST=()   # NAME|codec|filters|description, from plugin_codecs.py list
codec_frame() { echo "$DATA/codecs-$1.b2nd"; }
codec_raw() { echo "$DATA/codecs-$1.raw"; }
# The test venv's python, or, when its requirements lack the J2K/HTJ2K
# plugins, a bench-only venv beside it with them added, pinned.
codecs_python() {
  if ! "$ROOT/scripts/test-venv.sh" "$BUILD" >&2; then
    CODECS_WHY="no python-blosc2 (scripts/test-venv.sh $BUILD failed)"; return
  fi
  CODECS_PY=$BUILD/venv/bin/python
  "$CODECS_PY" -c 'import blosc2_j2k, blosc2_htj2k' 2>/dev/null && return
  local venv=$BUILD/bench-venv plugins=(blosc2-j2k==0.4.0 blosc2-htj2k==0.4.2)
  CODECS_NOTE="; python-blosc2's J2K/HTJ2K plugins from $venv (${plugins[*]}), not in the test venv"
  if ! "$venv/bin/python" -c 'import blosc2, blosc2_j2k, blosc2_htj2k' 2>/dev/null; then
    log "making $venv: the test venv's requirements and ${plugins[*]}"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" &&
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$ROOT/tests/python/requirements.txt" &&
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${plugins[@]}" ||
      { CODECS_WHY="pip could not install ${plugins[*]} into $venv"; CODECS_PY=""; return; }
  fi
  CODECS_PY=$venv/bin/python
}
make_codec_frames() {
  codecs_python
  [[ -n $CODECS_PY ]] || return
  mapfile -t CODECS_LIST < <("$CODECS_PY" "$ROOT/bench/plugin_codecs.py" list)
  ((${#CODECS_LIST[@]})) || { CODECS_WHY="bench/plugin_codecs.py list failed"; return; }
  local c name
  for c in "${CODECS_LIST[@]}"; do
    name=${c%%|*}
    [[ -f $(codec_frame "$name") && -f $(codec_raw "$name") ]] && continue
    log "making $(codec_frame "$name") and its decoded chunks (python-blosc2)"
    "$CODECS_PY" "$ROOT/bench/plugin_codecs.py" make "$name" "$(codec_frame "$name")" "$(codec_raw "$name")" ||
      { CODECS_WHY="bench/plugin_codecs.py make $name failed"; return; }
  done
}
wants codecs && make_codec_frames
if wants cp && [[ ! -f $CP_SRC ]]; then
  head -c "$((CP_MB << 20))" "$(set_raw f32)" >"$CP_SRC.tmp" && mv "$CP_SRC.tmp" "$CP_SRC"
fi
if ((PREPARE_ONLY)); then
  log "data sets ready in $DATA"
  exit 0
fi
rm -rf "$SCRATCH/work"
mkdir -p "$SCRATCH/work"
WORK=$SCRATCH/work

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
STAT_START=$(head -1 /proc/stat)
log "load average at start: $LOAD_START"

# --- results ---------------------------------------------------------------------

ROWS=()
row() { ROWS+=("| $1 | $2 | $3 | $4 | $5 | $6 |"); }
# verdict EXPRESSION: PASS when awk finds it true, n/a when a figure is missing.
verdict() {
  local expr=$1
  if [[ $expr == *n/a* || $expr == *nan* || -z $expr ]]; then echo "n/a"; return; fi
  local rc=0
  awk "BEGIN { exit !($expr) }" 2>/dev/null || rc=$?
  case $rc in
    0) echo "PASS" ;;
    1) echo "**FAIL**" ;;
    *) echo "n/a" ;;  # a figure is missing: awk could not parse the comparison
  esac
}

# --- 1. sequential reads: cold and warm ---------------------------------------------

seq_reads() {
  local s=$1 frame raw sqfs
  frame=$(set_frame "$s") raw=$(set_raw "$s") sqfs=$(set_sqfs "$s")
  local b2_cold=() b2_warm=() sq_cold=() sq_warm=() lib2=() lib1=() page=() out
  # What bounds the cold and warm reads: CPU per GB, the disk, folio sizes.
  local daemon_cpu=() reader_cpu=() lib2_cpu=() disk=() b2_folios=() raw_folios=() shm=() shm_folios=() pid t0 t1 bytes
  log "sequential reads: $(set_desc "$s")"
  wait_quiet
  for ((r = 0; r < RUNS; r++)); do
    drop_caches
    mount_b2 "$frame" "$MNT/b2"
    pid=$(daemon_pid "$MNT/b2")
    t0=$(proc_cpu_ticks "$pid")
    out=$("$FSBENCH" read "$MNT/b2/data"); b2_cold+=("$(kv mbps "$out")")
    t1=$(proc_cpu_ticks "$pid")
    bytes=$(kv bytes "$out")
    daemon_cpu+=("$(awk -v t="$((t1 - t0))" -v hz="$CLK_TCK" -v b="$bytes" 'BEGIN { print t / hz / (b / 1e9) }')")
    reader_cpu+=("$(awk -v c="$(kv cpu_s "$out")" -v b="$bytes" 'BEGIN { print c / (b / 1e9) }')")
    out=$("$FSBENCH" read "$MNT/b2/data"); b2_warm+=("$(kv mbps "$out")")
    b2_folios+=("$(kv large_percent "$("$FSBENCH" folios "$MNT/b2/data")")")
    unmount_wait "$MNT/b2"

    drop_caches
    mount_sq "$sqfs" "$MNT/sq"
    out=$("$FSBENCH" read "$MNT/sq/$(basename "$raw")"); sq_cold+=("$(kv mbps "$out")")
    out=$("$FSBENCH" read "$MNT/sq/$(basename "$raw")"); sq_warm+=("$(kv mbps "$out")")
    unmount_wait "$MNT/sq"

    drop_caches
    out=$("$FSBENCH" decode "$frame" 2); lib2+=("$(kv mbps "$out")")
    lib2_cpu+=("$(awk -v c="$(kv cpu_s "$out")" -v b="$(kv bytes "$out")" 'BEGIN { print c / (b / 1e9) }')")
    drop_caches
    out=$("$FSBENCH" decode "$frame" 1); lib1+=("$(kv mbps "$out")")
    drop_caches
    out=$("$FSBENCH" read "$frame"); disk+=("$(kv mbps "$out")")

    "$FSBENCH" read "$raw" >/dev/null
    out=$("$FSBENCH" read "$raw"); page+=("$(kv mbps "$out")")
    raw_folios+=("$(kv large_percent "$("$FSBENCH" folios "$raw")")")
    # The same bytes in tmpfs, a page cache of 4 KB pages without FUSE: what
    # folio size alone costs a warm read.
    if shm_has_room "$raw"; then
      cp "$raw" "$SHM_COPY"
      "$FSBENCH" read "$SHM_COPY" >/dev/null
      out=$("$FSBENCH" read "$SHM_COPY"); shm+=("$(kv mbps "$out")")
      shm_folios+=("$(kv large_percent "$("$FSBENCH" folios "$SHM_COPY")")")
      rm -f "$SHM_COPY"
    fi
  done
  # Correctness: the mount serves exactly what the library decodes.
  local want got
  want=$(kv sum "$("$FSBENCH" decode "$frame" 2 --sum)")
  mount_b2 "$frame" "$MNT/b2"
  got=$(kv sum "$("$FSBENCH" read "$MNT/b2/data" --sum)")
  unmount_wait "$MNT/b2"
  [[ $want == "$got" ]] || die "$s: blosc2fs data differs from the library's decoding ($got vs $want)"

  local c w q l2 p
  c=$(median "${b2_cold[@]}") w=$(median "${b2_warm[@]}") q=$(median "${sq_cold[@]}")
  l2=$(median "${lib2[@]}") p=$(median "${page[@]}")
  local v1 v2
  v1=$(verdict "$c >= 0.6 * $l2")
  v2=$(verdict "$c >= 4 * $q")
  row "cold sequential read of \`data\` (MB/s): $(set_desc "$s")" "$(spread "${b2_cold[@]}")" \
    "decode 2 threads $(spread "${lib2[@]}"), 1 thread $(spread "${lib1[@]}")" "$(spread "${sq_cold[@]}")" \
    "≥ 0.6 × 2-thread ($(fmt "$(awk -v x="$l2" 'BEGIN{print 0.6*x}')")); ≥ 4 × squashfuse_ll ($(fmt "$(awk -v x="$q" 'BEGIN{print 4*x}')"))" \
    "$v1 / $v2"
  local shm_text=""
  ((${#shm[@]})) && shm_text="; of a tmpfs copy ($(fmt "$(median "${shm_folios[@]}")")% in large folios) $(spread "${shm[@]}")"
  row "warm re-read of \`data\` (MB/s): $(set_desc "$s")" "$(spread "${b2_warm[@]}")" "page-cache read of the .raw file $(spread "${page[@]}")$shm_text" \
    "$(spread "${sq_warm[@]}")" "≥ 0.8 × page cache ($(fmt "$(awk -v x="$p" 'BEGIN{print 0.8*x}')"))" "$(verdict "$w >= 0.8 * $p")"
  bounds_row "$s" "$frame" "$bytes" "$(median "${daemon_cpu[@]}")" "$(median "${reader_cpu[@]}")" \
    "$(median "${lib2_cpu[@]}")" "$(median "${disk[@]}")" "$(median "${b2_folios[@]}")" "$(median "${raw_folios[@]}")" \
    "$(awk -v a="$l2" -v b="$q" 'BEGIN { print (0.6 * a > 4 * b ? 0.6 * a : 4 * b) }')"
}

# The ceilings a cold read meets on this machine, measured in the same runs:
# the frame file read from disk times its compression ratio; the CPUs divided
# by the CPU seconds each GB costs, in-process and through the mount (daemon
# plus reader); and, for warm reads, how much of the page cache sits in large
# folios (a cached read copies folio by folio). Informational: no verdict.
bounds_row() {
  local s=$1 frame=$2 bytes=$3 daemon=$4 reader=$5 lib=$6 disk_mbps=$7 b2_large=$8 raw_large=$9 need=${10}
  local ncpu disk_data lib_max fuse_max why
  ncpu=$(nproc)
  disk_data=$(awk -v d="$disk_mbps" -v b="$bytes" -v f="$(stat -c %s "$frame")" 'BEGIN { print d * b / f }')
  lib_max=$(awk -v n="$ncpu" -v c="$lib" 'BEGIN { print (c > 0 ? n / c * 1000 : "nan") }')
  fuse_max=$(awk -v n="$ncpu" -v c="$daemon" -v r="$reader" 'BEGIN { print (c + r > 0 ? n / (c + r) * 1000 : "nan") }')
  why=$(awk -v need="$need" -v d="$disk_data" -v l="$lib_max" -v f="$fuse_max" 'BEGIN {
    if (need > d) print "above the disk bound"
    else if (need > l) print "above what the library decodes on these CPUs"
    else if (need > f) print "above the CPU bound of reading through this daemon"
    else print "within every bound" }')
  row "bounds on this machine: $(set_desc "$s")" \
    "CPU per GB read cold: daemon $(fmt "$daemon" 2) s + reader $(fmt "$reader" 2) s → at most $(fmt "$fuse_max") MB/s on $ncpu CPUs; \`data\` cached in large folios: $(fmt "$b2_large")%" \
    "decoding: $(fmt "$lib" 2) CPU s per GB → at most $(fmt "$lib_max") MB/s; frame file read cold at $(fmt "$disk_mbps") MB/s → at most $(fmt "$disk_data") MB/s of data; .raw cached in large folios: $(fmt "$raw_large")%" \
    "—" "the cold targets need $(fmt "$need") MB/s" "$why"
}

# --- 2. random 4 KB reads ---------------------------------------------------------------

random_reads() {
  local threads=$1 frame raw sqfs
  frame=$(set_frame rnd) raw=$(set_raw rnd) sqfs=$(set_sqfs rnd)
  local iops=() p50=() p99=() per_read=() cpu=() sq_iops=() sq_p50=() sq_p99=() out pid
  log "random 4 KB reads, $threads thread(s), $NREADS reads"
  wait_quiet
  for ((r = 0; r < RUNS; r++)); do
    drop_caches
    mount_b2 "$frame" "$MNT/b2"
    pid=$(daemon_pid "$MNT/b2")
    local w0 c0 w1 c1
    w0=$(proc_io "$pid" wchar) c0=$(proc_cpu_ticks "$pid")
    out=$("$FSBENCH" randread "$MNT/b2/data" "$NREADS" "$threads" --seed $((r + 1)))
    w1=$(proc_io "$pid" wchar) c1=$(proc_cpu_ticks "$pid")
    iops+=("$(kv iops "$out")") p50+=("$(kv p50_us "$out")") p99+=("$(kv p99_us "$out")")
    # Bytes the daemon sent to the kernel per read (reply headers included):
    # about 4 KB means the kernel asked for the 4 KB and nothing around it.
    per_read+=("$(awk -v a="$w0" -v b="$w1" -v n="$NREADS" 'BEGIN { print (b - a) / n }')")
    cpu+=("$(awk -v a="$c0" -v b="$c1" -v n="$NREADS" -v hz="$(getconf CLK_TCK)" 'BEGIN { print (b - a) / hz / n * 1e6 }')")
    unmount_wait "$MNT/b2"

    drop_caches
    mount_sq "$sqfs" "$MNT/sq"
    out=$("$FSBENCH" randread "$MNT/sq/$(basename "$raw")" "$NREADS" "$threads" --seed $((r + 1)))
    sq_iops+=("$(kv iops "$out")") sq_p50+=("$(kv p50_us "$out")") sq_p99+=("$(kv p99_us "$out")")
    unmount_wait "$MNT/sq"
  done
  local lib lib_blocks
  lib=$("$FSBENCH" randrange "$frame" "$NREADS" "$threads" --seed 1)
  lib_blocks=$(kv blocks_per_read "$lib")
  local i q pr
  i=$(median "${iops[@]}") q=$(median "${sq_iops[@]}") pr=$(median "${per_read[@]}")
  row "random 4 KB pread, $threads thread(s), cold, $NREADS reads: reads/s (p50 / p99 µs); $(set_desc rnd)" \
    "$(fmt "$i") ($(fmt "$(median "${p50[@]}")") / $(fmt "$(median "${p99[@]}")")); $(fmt "$pr") B served and $(fmt "$(median "${cpu[@]}")") µs daemon CPU per read" \
    "decode_range on chunks in memory: $(fmt "$(kv iops "$lib")") ($(fmt "$(kv p50_us "$lib")") / $(fmt "$(kv p99_us "$lib")")); $lib_blocks block per read" \
    "$(fmt "$q") ($(fmt "$(median "${sq_p50[@]}")") / $(fmt "$(median "${sq_p99[@]}")"))" \
    "≥ 5000 reads/s; at most one 64 KB block decoded per read (≤ 4.2 KB served per read)" \
    "$(verdict "$i >= 5000") / $(verdict "$pr <= 4300")"
}

# --- 3. listing and mounting many chunks ---------------------------------------------------

list_many() {
  local t=() sq=() t0 t1 n
  log "ls -l of $LS_CHUNKS chunks"
  wait_quiet
  for ((r = 0; r < RUNS; r++)); do
    mount_b2 "$MANY_LS" "$MNT/b2"
    t0=$(now)
    # Timing `ls -l` itself is the point.
    # shellcheck disable=SC2012
    n=$(ls -l "$MNT/b2/chunks" | wc -l)
    t1=$(now)
    t+=("$(elapsed "$t0" "$t1")")
    unmount_wait "$MNT/b2"
    ((n == LS_CHUNKS + 1)) || die "ls -l listed $((n - 1)) chunks, not $LS_CHUNKS"
    mount_sq "$MANY_LS_SQFS" "$MNT/sq"
    t0=$(now); ls -l "$MNT/sq" >/dev/null; t1=$(now)
    sq+=("$(elapsed "$t0" "$t1")")
    unmount_wait "$MNT/sq"
  done
  local m
  m=$(median "${t[@]}")
  row "\`ls -l chunks/\`, $LS_CHUNKS chunks, fresh mount (s)" "$(fmt "$m" 3)" "—" \
    "$(fmt "$(median "${sq[@]}")" 3) (the same chunks as $LS_CHUNKS files)" "< 1 s" "$(verdict "$m < 1")"
}

mount_many() {
  local t=() rss=() lib_t=() lib_rss=() t0 t1 pid out
  log "mounting a frame of $MOUNT_CHUNKS chunks"
  wait_quiet
  for ((r = 0; r < RUNS; r++)); do
    drop_caches
    t0=$(now); mount_b2 "$MANY_MOUNT" "$MNT/b2"; t1=$(now)
    t+=("$(elapsed "$t0" "$t1")")
    pid=$(daemon_pid "$MNT/b2")
    rss+=("$(awk '$1 == "VmRSS:" { print $2 / 1024 }' "/proc/$pid/status")")
    [[ -e $MNT/b2/chunks/$(printf '%08d' $((MOUNT_CHUNKS - 1))) ]] || die "the last chunk is missing from the mount"
    unmount_wait "$MNT/b2"
    drop_caches
    out=$("$FSBENCH" open "$MANY_MOUNT")
    lib_t+=("$(kv seconds "$out")") lib_rss+=("$(awk -v k="$(kv rss_kb "$out")" 'BEGIN { print k / 1024 }')")
  done
  local m r_mb
  m=$(median "${t[@]}") r_mb=$(median "${rss[@]}")
  row "mount a frame of $MOUNT_CHUNKS chunks, cold: time (s), daemon RSS (MB)" "$(fmt "$m" 3) s, $(fmt "$r_mb" 1) MB" \
    "Frame::open $(fmt "$(median "${lib_t[@]}")" 3) s, process RSS $(fmt "$(median "${lib_rss[@]}")" 1) MB" "—" \
    "< 0.5 s; < 64 MB" "$(verdict "$m < 0.5") / $(verdict "$r_mb < 64")"
}

# --- 4. writing -----------------------------------------------------------------------------

copy_in() {
  local t=() lib=() out new="$WORK/new.b2frame" t0 t1 ok=1 why="" wrong=""
  log "cp of $CP_MB MB into data of a new frame"
  wait_quiet
  "$FSBENCH" read "$CP_SRC" >/dev/null  # the source comes from the page cache in both cases
  for ((r = 0; r < RUNS && ok; r++)); do
    rm -rf "$new"
    if ! mount_b2 "$new" "$MNT/new" -o create,codec=zstd,clevel=5,typesize=4,chunksize=4M 2>"$WORK/mount.err"; then
      ok=0 why="-o create failed: $(head -1 "$WORK/mount.err")"; break
    fi
    t0=$(now)
    if ! cp "$CP_SRC" "$MNT/new/data" 2>"$WORK/cp.err"; then
      ok=0 why=$(head -1 "$WORK/cp.err")
      unmount_wait "$MNT/new"; break
    fi
    unmount_wait "$MNT/new"
    t1=$(now)
    t+=("$(awk -v s="$(elapsed "$t0" "$t1")" -v b="$((CP_MB << 20))" 'BEGIN { print b / s / 1e6 }')")
    local want got
    want=$(kv sum "$("$FSBENCH" read "$CP_SRC" --sum)")
    got=$(kv sum "$("$FSBENCH" decode "$new" 1 --sum)")
    [[ $want == "$got" ]] || wrong="the new frame does not hold the bytes copied in"
  done
  for ((r = 0; r < RUNS; r++)); do
    rm -rf "$WORK/lib.b2frame"
    out=$("$FSBENCH" write "$CP_SRC" "$WORK/lib.b2frame" zstd 5 4 $((4 << 20)))
    lib+=("$(kv mbps "$out")")
  done
  rm -rf "$new" "$WORK/lib.b2frame"
  local l
  l=$(median "${lib[@]}")
  if ((ok)); then
    local c
    c=$(median "${t[@]}")
    local v
    v=$(verdict "$c >= 0.5 * $l")
    [[ -z $wrong ]] || { log "cp: $wrong"; v="**FAIL** ($wrong)"; }
    row "\`cp\` $CP_MB MB into \`data\` of a new frame (zstd 5, typesize 4, 4 MB chunks) until unmounted (MB/s)" \
      "$(fmt "$c")" "FrameWriter $(fmt "$l")" "— (read-only)" "≥ 0.5 × in-process ($(fmt "$(awk -v x="$l" 'BEGIN{print 0.5*x}')"))" \
      "$v"
  else
    log "cp: writing not available: $why"
    row "\`cp\` $CP_MB MB into \`data\` of a new frame (zstd 5, typesize 4, 4 MB chunks) until unmounted (MB/s)" \
      "n/a (writing not available: ${why//|/\\|})" "FrameWriter $(fmt "$l")" "— (read-only)" \
      "≥ 0.5 × in-process ($(fmt "$(awk -v x="$l" 'BEGIN{print 0.5*x}')"))" "n/a"
  fi
}

vlmeta_edit() {
  local frame edit="$WORK/edit.b2frame" lib_frame="$WORK/edit-lib.b2frame"
  frame=$(set_frame rnd)
  log "vlmetalayer edit on $(set_desc rnd) (copying the frame)"
  wait_quiet
  cp "$frame" "$edit"
  cp "$frame" "$lib_frame"
  local t=() bytes=() grow=() lib_t=() lib_plan=() lib_grow=() ok=1 why="" wrong="" pid s0 s1 w0 w1 t0 t1 out value
  for ((r = 0; r < RUNS; r++)); do
    value="benchmark edit $r"
    s0=$(stat -c %s "$edit")
    mount_b2 "$edit" "$MNT/b2"
    pid=$(daemon_pid "$MNT/b2")
    w0=$(proc_io "$pid" write_bytes)
    t0=$(now)
    if ! { echo "$value" >"$MNT/b2/vlmeta/x" && sync "$MNT/b2/vlmeta/x"; } 2>"$WORK/edit.err"; then
      ok=0 why=$(head -1 "$WORK/edit.err" | sed 's/^.*line [0-9]*: //')
      unmount_wait "$MNT/b2"; break
    fi
    w1=$(proc_io "$pid" write_bytes)
    unmount_wait "$MNT/b2"
    t1=$(now)
    s1=$(stat -c %s "$edit")
    t+=("$(elapsed "$t0" "$t1")") bytes+=("$((w1 - w0))") grow+=("$((s1 - s0))")
    [[ $("$FSBENCH" show-vlmeta "$edit" x) == "$value" ]] || wrong="the frame does not hold the new value"
  done
  # One more edit with the daemon under strace, for the bytes its write calls
  # carry (write_bytes above counts whole page-cache folios dirtied).
  local syscall_bytes="n/a" spid
  if ((ok)); then
    mount_b2 "$edit" "$MNT/b2"
    pid=$(daemon_pid "$MNT/b2")
    strace -f -qq -p "$pid" -e trace=write,pwrite64,pwritev,pwritev2 -o "$WORK/edit.strace" &
    spid=$!
    sleep 1  # attached
    echo "benchmark edit traced" >"$MNT/b2/vlmeta/x" && sync "$MNT/b2/vlmeta/x"
    unmount_wait "$MNT/b2"
    wait "$spid" || true
    syscall_bytes=$(awk '/write/ && $NF ~ /^[0-9]+$/ { s += $NF; n++ } END { printf "%d B in %d calls", s, n }' "$WORK/edit.strace")
  fi
  for ((r = 0; r < RUNS; r++)); do
    s0=$(stat -c %s "$lib_frame")
    out=$("$FSBENCH" vlmeta "$lib_frame" x "benchmark edit $r")
    s1=$(stat -c %s "$lib_frame")
    lib_t+=("$(awk -v s="$(kv seconds "$out")" 'BEGIN { print s * 1000 }')") lib_plan+=("$(kv plan_bytes "$out")") lib_grow+=("$((s1 - s0))")
  done
  rm -f "$edit" "$lib_frame"
  local lib_text
  lib_text="FrameEditor open + set + commit $(fmt "$(median "${lib_t[@]}")" 1) ms, plan writes $(fmt "$(median "${lib_plan[@]}")") B, file size change $(fmt "$(median "${lib_grow[@]}")") B"
  if ((ok)); then
    local b v
    b=$(median "${bytes[@]}")
    v=$(verdict "$b <= 1048576")  # the dirtied pages: an upper bound of what reaches the disk
    [[ -z $wrong ]] || { log "vlmeta edit: $wrong"; v="**FAIL** ($wrong)"; }
    row "vlmetalayer edit (\`echo > vlmeta/x\`, fsync, unmount) on $(set_desc rnd)" \
      "$(fmt "$(median "${t[@]}")" 3) s; daemon's writes: $syscall_bytes (page cache dirtied: $(fmt "$b") B); file size change $(fmt "$(median "${grow[@]}")") B" \
      "$lib_text" "— (read-only)" "kilobytes, not the frame: ≤ 1 MiB written" "$v"
  else
    log "vlmeta edit: writing not available: $why"
    row "vlmetalayer edit (\`echo > vlmeta/x\`, fsync, unmount) on $(set_desc rnd)" \
      "n/a (writing not available: ${why//|/\\|})" "$lib_text" "— (read-only)" "kilobytes, not the frame: ≤ 1 MiB written" "n/a"
  fi
}

# --- 5. a store of many leaves ---------------------------------------------------------------

rss_mb() { awk '$1 == "VmRSS:" { print $2 / 1024 }' "/proc/$1/status"; }
children_cpu_ticks() { awk '{ print $16 + $17 }' "/proc/$$/stat"; }
# Leaf frames the daemon holds open: the leaf files (.b2d) and embedded frames'
# memory files it has open, each once (a writable leaf's editor has a
# descriptor of its own, an embedded frame is read through /proc/self/fd), and
# its descriptors of the .b2z but the embed store's own.
open_leaves() {
  local pid=$1 store=$2 fd
  for fd in /proc/"$pid"/fd/*; do
    printf '%s %s\n' "$(stat -L -c %d:%i "$fd" 2>/dev/null)" "$(readlink "$fd")"
  done | awk -v s="$store" '
    index($2, "/memfd:blosc2fs-embedded") == 1 && !seen[$1]++ { n++; next }
    s ~ /\.b2z$/ && $2 == s { z++; next }
    index($2, s "/") == 1 && $2 ~ /\.(b2nd|b2f|b2b)$/ && !seen[$1]++ { n++ }
    END { print n + (z > 1 ? z - 1 : 0) }'
}

store_rows() {
  local fmt=$1 store mnt=$MNT/b2 first=g00/s00/leaf00000 pid t0 t1 c0 c1 n out
  store=$(store_path "$fmt")
  local what="TreeStore of $STORE_LEAVES leaves (.$fmt)"
  if [[ -n $STORE_WHY ]]; then
    row "$what: mount, cold listing" "n/a ($STORE_WHY)" "—" "—" "mount < 1 s; listing < 2 s" "n/a"
    return
  fi
  log "$what: mount, first leaf, cold listing, memory"
  wait_quiet
  local f0 f1 find_cpu=() mount_t=() first_t=() keys_t=() key_entries=() list_t=() list_cpu=() entries=() rss_list=() rss_json=() json_t=() open_list=() open_json=()
  for ((r = 0; r < RUNS; r++)); do
    drop_caches
    t0=$(now)
    mount_b2 "$store" "$mnt" -o "cache_size=${STORE_CACHE_MB}M"
    [[ -d $mnt/g00 ]] || die "$store: g00 is not a directory of the mount"
    t1=$(now)
    mount_t+=("$(elapsed "$t0" "$t1")")
    t0=$(now)
    cat "$mnt/$first/data" >/dev/null
    t1=$(now)
    first_t+=("$(elapsed "$t0" "$t1")")
    unmount_wait "$mnt"

    # The key tree, as store.json and `b2info --tree` show it: every group and
    # leaf directory with its type and size (mkstore.py's /gAA/sBB/leafNNNNN),
    # not descending into the leaves, whose frames are opened on first use.
    drop_caches
    mount_b2 "$store" "$mnt" -o "cache_size=${STORE_CACHE_MB}M"
    t0=$(now)
    n=$(find "$mnt" -maxdepth 3 -printf '%y %s %p\n' | wc -l)
    t1=$(now)
    keys_t+=("$(elapsed "$t0" "$t1")") key_entries+=("$n")
    unmount_wait "$mnt"

    drop_caches
    mount_b2 "$store" "$mnt" -o "cache_size=${STORE_CACHE_MB}M"
    pid=$(daemon_pid "$mnt")
    # What `ls -lR` needs: every entry's type and size (a stat of each), here from find.
    # CPU of the daemon, and of find (this shell's waited-for children), for it.
    c0=$(proc_cpu_ticks "$pid") f0=$(children_cpu_ticks) t0=$(now)
    n=$(find "$mnt" -printf '%y %s %p\n' | wc -l)
    t1=$(now) c1=$(proc_cpu_ticks "$pid") f1=$(children_cpu_ticks)
    list_t+=("$(elapsed "$t0" "$t1")") entries+=("$n")
    list_cpu+=("$(awk -v t="$((c1 - c0))" -v hz="$CLK_TCK" 'BEGIN { print t / hz }')")
    find_cpu+=("$(awk -v t="$((f1 - f0))" -v hz="$CLK_TCK" 'BEGIN { print t / hz }')")
    rss_list+=("$(rss_mb "$pid")") open_list+=("$(open_leaves "$pid" "$store")")
    t0=$(now)
    find "$mnt" -name frame.json -print0 | xargs -0 cat >/dev/null
    t1=$(now)
    json_t+=("$(elapsed "$t0" "$t1")")
    rss_json+=("$(rss_mb "$pid")") open_json+=("$(open_leaves "$pid" "$store")")
    unmount_wait "$mnt"
  done
  local lib m k rl rj bound
  drop_caches
  lib=$("$FSBENCH" store "$store")
  m=$(median "${mount_t[@]}") k=$(median "${keys_t[@]}")
  row "$what: mount until the mount point answers, cold (s)" "$(spread_d 3 "${mount_t[@]}")" \
    "Store::open $(fmt "$(kv open_s "$lib")" 3)" "—" "< 1 s" "$(verdict "$m < 1")"
  row "$what: cold listing of the key tree, \`find -maxdepth 3 -printf '%y %s %p'\` (every group and leaf directory), first after mounting (s)" \
    "$(spread_d 3 "${keys_t[@]}"): $(fmt "$(median "${key_entries[@]}")") entries" \
    "—" "—" "< 2 s" "$(verdict "$k < 2")"
  row "$what: cold listing of every file, \`find -printf '%y %s %p'\` into every leaf, first after mounting (s)" \
    "$(spread_d 2 "${list_t[@]}"): $(fmt "$(median "${entries[@]}")") entries; CPU: daemon $(fmt "$(median "${list_cpu[@]}")" 2) s, find $(fmt "$(median "${find_cpu[@]}")" 2) s" \
    "every leaf's frame opened once $(fmt "$(kv leaves_s "$lib")" 3)" "—" "— (informational; the target is the key tree's)" "—"
  row "$what: \`cat\` of the first leaf's \`data\`, right after mounting, cold (s)" "$(spread_d 3 "${first_t[@]}")" "—" "—" \
    "— (informational)" "—"
  # The memory bound: the cache budget, plus a small cost per leaf.
  rl=$(median "${rss_list[@]}") rj=$(median "${rss_json[@]}")
  bound=$(awk -v c="$STORE_CACHE_MB" -v n="$STORE_LEAVES" 'BEGIN { print c + n * 4 / 1024 }')
  row "$what: daemon RSS (MB) and leaves open after the listing, then after reading every leaf's \`frame.json\` ($(fmt "$(median "${json_t[@]}")" 2) s), \`-o cache_size=${STORE_CACHE_MB}M\`" \
    "$(fmt "$rl" 1) MB, $(fmt "$(median "${open_list[@]}")") open; $(fmt "$rj" 1) MB, $(fmt "$(median "${open_json[@]}")") open" \
    "process RSS after opening every leaf once: $(fmt "$(awk -v k="$(kv rss_kb "$lib")" 'BEGIN { print k / 1024 }')" 1) MB" "—" \
    "≤ cache_size + 4 KB per leaf ($(fmt "$bound") MB); ≤ 64 leaves open" \
    "$(verdict "$rl <= $bound && $rj <= $bound") / $(verdict "$(median "${open_list[@]}") <= 64 && $(median "${open_json[@]}") <= 64")"
}

# --- 6. plugin codecs: decoding python-blosc2's frames on one thread ------------------------

# Per case: python-blosc2 (best of 3 passes) and codec_bench --frame (best of 3)
# on the same frame, chunks held in memory, RUNS times in turn; the figures are
# medians of those bests. Both run pinned to one CPU: python-blosc2's HTJ2K
# plugin decodes with a pool of one OpenHTJ2K thread per core, which nthreads=1
# does not reach. codec_bench checks its output against python-blosc2's.
codec_rows() {
  local what="decoding python-blosc2's frame on one CPU, chunks in memory (MB/s)"
  if [[ -n $CODECS_WHY ]]; then
    row "plugin codecs: $what" "n/a ($CODECS_WHY)" "—" "—" "≥ 0.9 × python-blosc2" "n/a"
    return
  fi
  local cpu=$(($(nproc) - 1)) c name codec filters desc frame raw out py=() py_cpu=() b2=() b2_cpu=() mb ratio checked
  for c in "${CODECS_LIST[@]}"; do
    IFS='|' read -r name codec filters desc <<<"$c"
    frame=$(codec_frame "$name") raw=$(codec_raw "$name")
    log "decoding $codec ($filters) on CPU $cpu: python-blosc2 and codec_bench"
    wait_quiet
    py=() py_cpu=() b2=() b2_cpu=() checked=yes
    for ((r = 0; r < RUNS; r++)); do
      out=$(taskset -c "$cpu" "$CODECS_PY" "$ROOT/bench/plugin_codecs.py" time "$name" "$frame" 3) ||
        die "bench/plugin_codecs.py time $name failed"
      py+=("$(kv mbps "$out")") py_cpu+=("$(kv cpu_mbps "$out")") mb=$(kv mb "$out") ratio=$(kv ratio "$out")
      out=$(taskset -c "$cpu" "$CODEC_BENCH" --frame "$frame" --reps 3 --input "$raw" 2>&1) || checked=no
      b2+=("$(grep -o 'decode [0-9.]* MB/s' <<<"$out" | cut -d' ' -f2 || true)")
      b2_cpu+=("$(grep -o '[0-9.]* per CPU second' <<<"$out" | cut -d' ' -f1 || true)")
      [[ $out == *"(checked)"* ]] || { checked=no; log "codec_bench: $(tail -1 <<<"$out")"; }
    done
    local p b v
    p=$(median "${py[@]}") b=$(median "${b2[@]}")
    v=$(verdict "$b >= 0.9 * $p")
    [[ $checked == yes ]] || v="**FAIL** (output differs from python-blosc2's, or codec_bench failed)"
    row "$codec, filters $filters: $what; $desc; $(fmt "$mb" 1) MB, compression ratio $ratio" \
      "codec_bench $(spread "${b2[@]}") ($(fmt "$(awk -v b="$b" -v p="$p" 'BEGIN { print (p > 0 ? b / p : "nan") }')" 2) ×); per CPU s $(fmt "$(median "${b2_cpu[@]}")"); $([[ $checked == yes ]] && echo "bit-exact with python-blosc2's" || echo "NOT bit-exact, or codec_bench failed")" \
      "python-blosc2 $(python_blosc2_version) $(spread "${py[@]}"); per CPU s $(fmt "$(median "${py_cpu[@]}")")$CODECS_NOTE" \
      "—" "≥ 0.9 × python-blosc2 ($(fmt "$(awk -v x="$p" 'BEGIN{print 0.9*x}')"))" "$v"
  done
}
python_blosc2_version() { "$CODECS_PY" -c 'import blosc2; print(blosc2.__version__)'; }

# OpenZL (38), a codec the daemon decodes through the plugin's own library: the whole
# path, `cat data` of a fresh mount per run against python-blosc2's [:] (its threads).
openzl_row() {
  local what="cat data of a 512 MB float32 OpenZL SH_BD_ZSTD frame through the mount (MB/s)"
  if [[ -z $CODECS_PY ]] || ! "$CODECS_PY" -c 'import blosc2_openzl' 2>/dev/null; then
    row "OpenZL: $what" "n/a (no python with blosc2-openzl: scripts/test-venv.sh)" "—" "—" "≥ 0.5 × python-blosc2" "n/a"
    return
  fi
  log "OpenZL: cat data through the mount and python-blosc2's [:]"
  wait_quiet
  local out m p
  out=$("$CODECS_PY" "$ROOT/bench/plugin_codecs.py" openzl "$BLOSC2FS" "$SCRATCH/openzl" 512 "$RUNS") ||
    die "bench/plugin_codecs.py openzl failed"
  m=$(kv mount_mbps "$out") p=$(kv python_mbps "$out")
  row "OpenZL: $what; $(kv mb "$out") MB, ratio $(kv ratio "$out"), chunks $(kv chunks "$out")" \
    "$m (runs $(kv mount_runs "$out"); $(kv ratio_x "$out") ×)" \
    "python-blosc2 $(python_blosc2_version) [:] $p (runs $(kv python_runs "$out"))" \
    "—" "≥ 0.5 × python-blosc2 ($(fmt "$(awk -v x="$p" 'BEGIN{print 0.5*x}')"))" "$(verdict "$m >= 0.5 * $p")"
}

# --- run and print -----------------------------------------------------------------------------

if wants reads; then for s in "${SET_ORDER[@]}"; do seq_reads "$s"; done; fi
if wants random; then random_reads 1; random_reads 4; fi
wants ls && list_many
wants mount && mount_many
wants cp && copy_in
wants vlmeta && vlmeta_edit
if wants store; then store_rows b2d; store_rows b2z; fi
if wants codecs; then codec_rows; openzl_row; fi
# venv_rows GROUP SCRIPT [ARGS...]: the rows bench/SCRIPT prints, run by the test venv's
# python with BLOSC2FS SCRATCH SIZE_MB RUNS and ARGS.
venv_rows() {
  local group=$1 script=$2 rows
  shift 2
  if "$ROOT/scripts/test-venv.sh" "$BUILD" >&2; then
    log "$group rows (bench/$script)"
    wait_quiet
    mapfile -t rows < <("$BUILD/venv/bin/python" "$ROOT/bench/$script" "$BLOSC2FS" "$SCRATCH" "$SIZE_MB" "$RUNS" "$@") ||
      die "bench/$script failed"
    ROWS+=("${rows[@]}")
  else
    row "$group rows" "n/a (scripts/test-venv.sh $BUILD failed)" "—" "—" "—" "n/a"
  fi
}
wants remote && venv_rows remote remote.py "$MKFRAME"
if wants caterva2; then
  if "$ROOT/scripts/test-venv.sh" "$BUILD" >&2 && "$ROOT/scripts/caterva2-venv.sh" "$BUILD" >&2; then
    log "caterva2 rows (bench/caterva2.py)"
    wait_quiet
    mapfile -t caterva2_rows < <("$BUILD/venv/bin/python" "$ROOT/bench/caterva2.py" "$BLOSC2FS" "$SCRATCH" "$SIZE_MB" \
      "$RUNS" "$BUILD/venv-caterva2/bin") || die "bench/caterva2.py failed"
    ROWS+=("${caterva2_rows[@]}")
  else
    row "caterva2 rows" "n/a (scripts/test-venv.sh or scripts/caterva2-venv.sh $BUILD failed)" "—" "—" "—" "n/a"
  fi
fi
wants collections && venv_rows collections collection_mounts.py
wants zarr && venv_rows zarr zarr_view.py
wants array-writes && venv_rows array-writes array_writes.py
wants io_uring && venv_rows io_uring io_uring.py
wants dask && venv_rows dask dask_cluster.py
wants remote-slices && venv_rows remote-slices remote_slices.py

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/^MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo)
echo
echo "blosc2fs benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs ($CPU), $MEM RAM, Linux $(uname -r);"
# Time the hypervisor gave to other guests while we ran: another source of noise.
STEAL=$(awk -v a="$STAT_START" -v b="$(head -1 /proc/stat)" 'BEGIN { split(a, x); split(b, y); t = 0
  for (i = 2; i <= 9; i++) t += y[i] - x[i]
  printf "%.1f", (t > 0 ? 100 * (y[9] - x[9]) / t : 0) }')
BUSY_MAX=$(printf '%s\n' "${BUSY_SEEN[@]}" | sort -n | tail -1)
echo "median of $RUNS run(s)$( ((QUICK)) && echo ', --quick data sets')$([[ -n $READ_AHEAD_KB ]] && echo ", FUSE readahead set to $READ_AHEAD_KB KB"); load average (1/5/15 min) $LOAD_START at start, $LOAD_END at the end;"
echo "CPU busy with other work just before each group of measurements: at most $BUSY_MAX%; CPU time stolen by the hypervisor during the run: $STEAL%."
echo "Figures are medians; cold and warm rows give (min–max) over the runs."
echo
echo "| work | blosc2fs | in-process library / plain file | squashfuse_ll | target | result |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
PASSES=$(printf '%s\n' "${ROWS[@]}" | { grep -o 'PASS' || true; } | wc -l)
FAILS=$(printf '%s\n' "${ROWS[@]}" | { grep -o 'FAIL' || true; } | wc -l)
echo "targets: $PASSES PASS, $FAILS FAIL"
