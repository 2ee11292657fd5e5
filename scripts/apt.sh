# Sourced by the scripts that install Debian packages: apt-get that waits for
# another apt or dpkg (unattended-upgrades, a second test run) instead of failing.
#
#   apt_get install -y PACKAGES...    waits up to $APT_LOCK_WAIT s (default 600) for dpkg's locks
#   apt_get update                    the same for the package lists' lock
#
# DPkg::Lock::Timeout makes apt wait for /var/lib/dpkg/lock-frontend and
# /var/lib/dpkg/lock. apt-get update takes /var/lib/apt/lists/lock instead,
# which the option does not cover (apt 2.6 fails at once), so update is retried
# while apt says that lock is held.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-600}

apt_get() {
  if [[ ${1:-} != update ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" "$@"
    return
  fi
  local deadline=$((SECONDS + APT_LOCK_WAIT)) errors status
  while :; do
    errors=$(mktemp)
    status=0
    DEBIAN_FRONTEND=noninteractive apt-get "$@" 2>"$errors" || status=$?
    if ((status == 0)) || ! grep -q 'Could not get lock' "$errors" || ((SECONDS >= deadline)); then
      cat "$errors" >&2
      rm -f "$errors"
      return "$status"
    fi
    rm -f "$errors"
    sleep 2
  done
}
