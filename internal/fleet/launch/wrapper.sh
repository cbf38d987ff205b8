# linerate-launch DIR TOKEN-FILE COMMAND [ARG...]
# Reads one line, the token, from standard input into TOKEN-FILE (mode
# 600, a new file in DIR, a directory of this user's), starts COMMAND in
# the background and kills it when standard input closes. Reports on
# standard error: "linerate-launch: pid N" once COMMAND runs, then
# "linerate-launch: exit N" with its exit status (128+N after signal N).
set -u
umask 077
d=$1 tok=$2
shift 2
fail() { echo "linerate-launch: error $*" >&2; exit 97; }
mkdir -p "$d" 2>/dev/null || fail "cannot create $d"
if [ ! -d "$d" ] || [ -L "$d" ] || [ ! -O "$d" ]; then fail "$d is not a directory of this user"; fi
chmod 700 "$d" || fail "cannot make $d private"
IFS= read -r t || fail "no token on standard input"
(set -C; printf '%s\n' "$t" >"$tok") 2>/dev/null || fail "cannot create $tok"
exec 3<&0
"$@" </dev/null 3<&- &
p=$!
echo "linerate-launch: pid $p" >&2
(cat <&3; kill -TERM "$p"; sleep 5; kill -KILL "$p") >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$p"
st=$?
kill "$w" 2>/dev/null
rm -f "$tok"
echo "linerate-launch: exit $st" >&2
