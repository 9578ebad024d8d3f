#!/bin/sh
# A run whose database's device fills up mid-run (cli.store_disk_full): a small tmpfs is mounted,
# the run started on it, and the device filled once two trials are stored. Prints what each step
# said and its exit status for tests/cli_store_faults.cmake to check; unmounts on every exit.
# Usage: store_disk_full.sh TUNEBENCH SUITE WORK
set -u
tb=$1 suite=$2 work=$3
mnt=$work/mnt db=$work/mnt/results.sqlite
rm -rf "$work"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=4m tmpfs "$mnt" 2>/dev/null; then
  echo "SKIPPED: cannot mount a tmpfs here (it needs root)"
  exit 0
fi
trap 'umount "$mnt"' EXIT
"$tb" run --suite "$suite" --db "$db" >"$work/run.out" 2>&1 &
pid=$!
i=0
while [ $i -lt 600 ]; do
  n=$(sqlite3 "file:$db?mode=ro" "SELECT COUNT(*) FROM trials" 2>/dev/null)
  [ "${n:-0}" -ge 2 ] && break
  i=$((i + 1))
  sleep 0.2
done
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null
wait $pid
echo "run exit $?"
cat "$work/run.out"
# A run that cannot start on the full device leaves no database file.
"$tb" run --suite "$suite" --db "$mnt/new.sqlite" --quiet >"$work/new.out" 2>&1
echo "new run exit $?"
cat "$work/new.out"
echo "new database files: $(ls "$mnt" | grep -c '^new[.]sqlite')"
rm -f "$mnt/filler"
"$tb" show latest --verbose --db "$db" >"$work/show.out" 2>&1
echo "show exit $?"
cat "$work/show.out"
"$tb" run --resume latest --db "$db" --quiet
echo "resume exit $?"
echo "stored: $(sqlite3 "$db" "SELECT status || ' with ' || (SELECT COUNT(*) FROM trials) FROM runs")"
