#!/usr/bin/env bash
# Prepare this machine for the SSH tests (crates/gpurent-testhost): the login user `gputest` and
# sshd's privilege-separation directory. Run once as root before the tests (they run in parallel
# and must never create the user themselves: concurrent useradd calls race). Idempotent.
#
# - useradd creates a *locked* account ('!' in /etc/shadow), which sshd refuses with UsePAM no even
#   for public-key logins; a password hash set with chpasswd (or '*') unlocks it.
# - The password is a fixed, public test value used only by the loopback sshd fixture's
#   password-login tests (gpurent_testhost::TEST_PASSWORD); the fixture listens on 127.0.0.1 only.
set -euo pipefail

user=gputest
password='gpurent-test-pw'   # keep in sync with gpurent_testhost::TEST_PASSWORD

if [ "$(id -u)" != 0 ]; then
  echo "setup-test-host.sh: must run as root (creates user $user)" >&2
  exit 1
fi
if [ ! -x /usr/sbin/sshd ]; then
  echo "setup-test-host.sh: /usr/sbin/sshd is missing (apt-get install openssh-server)" >&2
  exit 1
fi

if ! id -u "$user" >/dev/null 2>&1; then
  useradd -m -s /bin/bash "$user"
fi
# Set the known test password with a fixed salt, so the hash is deterministic and a rerun only
# compares strings (usermod locks /etc/shadow; keep reruns cheap).
hash=$(openssl passwd -6 -salt gpurentfixture "$password")
if [ "$(getent shadow "$user" | cut -d: -f2)" != "$hash" ]; then
  usermod -p "$hash" "$user"
fi
mkdir -p -m 0755 /run/sshd

# Login users whose login shell is not POSIX (crates/gpurent-core/tests/login_shell_ssh.rs): sshd
# runs every command as `$SHELL -c LINE`, and fish and tcsh parse LINE their own way. '*' as the
# password hash: key logins only (never a password), and not locked.
for pair in gputest-fish:/usr/bin/fish:fish gputest-tcsh:/usr/bin/tcsh:tcsh; do
  u=${pair%%:*}; rest=${pair#*:}; sh_path=${rest%%:*}; pkg=${rest#*:}
  if [ ! -x "$sh_path" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >/dev/null \
      || echo "setup-test-host.sh: WARNING: could not install $pkg; the login-shell tests will fail under GPURENT_REQUIRE_SSH=1" >&2
  fi
  [ -x "$sh_path" ] || continue
  if ! id -u "$u" >/dev/null 2>&1; then
    useradd -m -s "$sh_path" "$u"
  fi
  [ "$(getent passwd "$u" | cut -d: -f7)" = "$sh_path" ] || usermod -s "$sh_path" "$u"
  [ "$(getent shadow "$u" | cut -d: -f2)" = '*' ] || usermod -p '*' "$u"
done

# A real Jupyter Server (from PyPI) that the test user can run, for the Jupyter tests
# (crates/gpurent-core/tests/jupyter_ssh.rs, crates/gpurent-cli/tests/jupyter_cli.rs), which find it
# through GPURENT_TEST_JUPYTER_PYTHON (scripts/check-all.sh sets it when this venv exists).
jv=/opt/gpurent-test-jupyter
if [ ! -x "$jv/bin/jupyter-server" ]; then
  if /usr/bin/python3 -m venv "$jv" && "$jv/bin/pip" install -q --disable-pip-version-check jupyter-server; then
    chmod -R a+rX "$jv"
  else
    echo "setup-test-host.sh: WARNING: could not install jupyter-server into $jv; the Jupyter tests will say they are skipped" >&2
  fi
fi
echo "test host ready: users $user gputest-fish gputest-tcsh, /run/sshd${jv:+, $jv}"
