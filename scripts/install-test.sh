#!/usr/bin/env bash
# make install-test: make install into a temporary DESTDIR (PREFIX
# /usr/local), then check that
#   - the installed dpctl and upcalld run and print the version the
#     Makefile stamped (git describe);
#   - the man page, the bash and zsh completions and the systemd unit are
#     where man, bash-completion, zsh and systemd look for PREFIX, and work
#     from there (man renders the page, bash-completion and zsh's compinit
#     load the completion, the unit's ExecStart is the installed upcalld);
#   - make uninstall removes everything it installed;
#   - go install ./cmd/dpctl ./cmd/upcalld works from a clone with an empty
#     GOPATH and module cache (needs GOPROXY, as a user's go install does).
# Needs man-db, bash-completion and zsh (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
prefix=/usr/local
dest=$(mktemp -d /tmp/ovsdp-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
fail() { echo "install-test: FAIL: $*" >&2; exit 1; }
for t in man manpath zsh systemd-analyze; do command -v $t >/dev/null || fail "$t is missing (run scripts/setup.sh)"; done
[ -r /usr/share/bash-completion/bash_completion ] || fail "bash-completion is missing (run scripts/setup.sh)"

start=$(date +%s)
$MAKE -s install DESTDIR="$dest" PREFIX=$prefix >/dev/null

want=$(git describe --tags --always --dirty)
for b in dpctl upcalld; do
	p=$dest$prefix/bin/$b
	[ -x "$p" ] || fail "$p not installed"
	v=$("$p" --version) || fail "$b --version failed"
	case $v in
	"$b $want (commit "*) ;;
	*) fail "$b --version printed '$v', want '$b $want (commit ...)'" ;;
	esac
	echo "install-test: $v"
done
"$dest$prefix/bin/dpctl" -V >/dev/null || fail "dpctl -V failed"

# man: the page's directory is on man's global path, and man finds and
# renders it there.
mandir=$prefix/share/man
manpath -g | tr : '\n' | grep -qx "$mandir" || fail "$mandir is not on man's path ($(manpath -g))"
page=$(man -M "$dest$mandir" -w 8 dpctl) || fail "man -M $dest$mandir does not find dpctl(8)"
[ "$page" = "$dest$mandir/man8/dpctl.8" ] || fail "man found $page"
MANWIDTH=80 man -M "$dest$mandir" 8 dpctl 2>/dev/null | grep -q 'dump-flows' || fail "man dpctl does not render the commands"

# bash: bash-completion looks in $XDG_DATA_DIRS/bash-completion/completions
# (default /usr/local/share:/usr/share) for a file named after the command.
bashdir=$prefix/share/bash-completion/completions
[ -f "$dest$bashdir/dpctl" ] || fail "no $bashdir/dpctl"
got=$(XDG_DATA_DIRS="$dest$prefix/share:/usr/share" bash --norc -c '
	. /usr/share/bash-completion/bash_completion
	__load_completion dpctl && complete -p dpctl') || fail "bash-completion did not load the dpctl completion from $bashdir"
[ "$got" = "complete -F _dpctl dpctl" ] || fail "bash: complete -p dpctl printed '$got'"
# and it completes: "dpctl dump-f<TAB>"
got=$(bash --norc -c '. "$1"; COMP_WORDS=(dpctl dump-f); COMP_CWORD=1; _dpctl; echo "${COMPREPLY[*]}"' _ "$dest$bashdir/dpctl")
[ "$got" = "dump-flows" ] || fail "bash: dpctl dump-f<TAB> gave '$got'"

# zsh: the site-functions directory is on zsh's default $fpath, and
# compinit registers _dpctl for dpctl from there.
zshdir=$prefix/share/zsh/site-functions
zsh -fc 'print -l $fpath' | grep -qx "$zshdir" || fail "$zshdir is not on zsh's default fpath"
got=$(zsh -fc 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -D; print -r -- $_comps[dpctl]' _ "$dest$zshdir")
[ "$got" = "_dpctl" ] || fail "zsh: compinit gave '$got' for dpctl, want _dpctl"

# systemd: PREFIX/lib/systemd/system is on systemd's unit path; ExecStart
# runs the installed upcalld.
unitdir=$prefix/lib/systemd/system
unit=$dest$unitdir/upcalld@.service
[ -f "$unit" ] || fail "no $unitdir/upcalld@.service"
systemd-analyze --system unit-paths 2>/dev/null | grep -qx "$unitdir" || fail "$unitdir is not on systemd's unit path"
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ "$exec_start" = "$prefix/bin/upcalld" ] || fail "ExecStart runs '$exec_start', want $prefix/bin/upcalld"
grep -q '@[A-Z]*@' "$unit" && fail "unsubstituted @VAR@ in the unit"
[ -f "$dest/etc/ovsdp/default.rules" ] && [ -f "$dest/etc/ovsdp/upcalld.conf" ] || fail "no default configuration in /etc/ovsdp"
# The shipped rules parse: upcalld refuses a bad --rules file at once.
out=$("$dest$prefix/bin/upcalld" --rules "$dest/etc/ovsdp/default.rules" --datapath netdev@x --flow-limit 0 2>&1 || true)
case $out in *"--flow-limit 0"*) ;; *) fail "default.rules does not parse: $out" ;; esac

$MAKE -s uninstall DESTDIR="$dest" PREFIX=$prefix >/dev/null
left=$(find "$dest" -mindepth 1 ! -type d)
[ -z "$left" ] || fail "uninstall left: $left"
echo "install-test: ok: install, run, man/bash/zsh/systemd paths, uninstall ($(( $(date +%s) - start )) s)"

# go install from a clone of HEAD with an empty GOPATH and module cache
# (the module is not published, so the local form stands in for
# go install github.com/ovsdp/ovsdp/cmd/dpctl@latest): the modules come
# from GOPROXY, and the binaries stamp their version from git.
t0=$(date +%s)
gp=$dest/gopath
git clone -q "$PWD" "$dest/clone"
(cd "$dest/clone" && env -u GOMODCACHE GOPATH="$gp" GOFLAGS=-modcacherw GOBIN="$gp/bin" \
	go install ./cmd/dpctl ./cmd/upcalld 2>"$dest/goinstall.log") ||
	{ cat "$dest/goinstall.log" >&2; fail "go install ./cmd/dpctl ./cmd/upcalld from a clean GOPATH"; }
head=$(git rev-parse HEAD)
for b in dpctl upcalld; do
	v=$("$gp/bin/$b" --version) || fail "go-installed $b --version"
	case $v in
	"$b v"*" (commit ${head:0:12}, go"*) ;;
	*) fail "go-installed $b --version printed '$v', want a version and commit ${head:0:12}" ;;
	esac
done
echo "install-test: ok: go install from a clean GOPATH and module cache: $v ($(( $(date +%s) - t0 )) s)"
