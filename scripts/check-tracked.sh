#!/usr/bin/env bash
# Fails when git tracks a build output: a file over 1 MB, or an executable
# binary (ELF, Mach-O or PE). Run from the repository, or give its path.
set -euo pipefail
cd "${1:-.}"
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "check-tracked: $f is $size bytes; tracked files stay under 1 MB" >&2
		bad=1
	fi
	case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" in
	7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | 4d5a*)
		echo "check-tracked: $f is an executable build output; build outputs are not tracked" >&2
		bad=1
		;;
	esac
done < <(git ls-files -z)
exit "$bad"
