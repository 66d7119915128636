# Writes the files of the NoCloud vendor-data that
# drivers/runtime/nocloud/env.go writes (a sandbox's env): a cloud-config
# whose write_files items have a path, permissions and content, each a
# JSON/YAML double-quoted scalar. It reads this subset of cloud-config, as
# cloud-init would write_files, not YAML.

# json decodes the body of a JSON string: \n \t \r \" \\ \/ \b \f and \uXXXX
# of ASCII (Go's encoder writes <, >, & and control characters so).
function json(s,    out, c, n, i) {
	out = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c != "\\") { out = out c; continue }
		c = substr(s, ++i, 1)
		if (c == "n") out = out "\n"
		else if (c == "t") out = out "\t"
		else if (c == "r") out = out "\r"
		else if (c == "b") out = out "\b"
		else if (c == "f") out = out "\f"
		else if (c == "u") {
			n = hex(substr(s, i + 1, 4))
			out = out sprintf("%c", n)
			i += 4
		} else out = out c # \" \\ \/
	}
	return out
}

function hex(h,    n, i) {
	n = 0
	for (i = 1; i <= 4; i++) n = n * 16 + index("0123456789abcdef", tolower(substr(h, i, 1))) - 1
	return n
}

function value(line) {
	sub(/^[^:]*:[ \t]*/, "", line)
	if (line ~ /^".*"$/) return json(substr(line, 2, length(line) - 2))
	return line
}

function flush() {
	if (path == "") return
	if (path ~ /'/) { print "bc-guest: vendor-data path refused: " path; path = ""; return }
	system("mkdir -p \"$(dirname '" path "')\"")
	printf "%s", content > path
	close(path)
	if (mode != "") system("chmod " mode " '" path "'")
	path = ""; content = ""; mode = ""
}

{ sub(/\r$/, "") }
/^[ \t]*-[ \t]+path:/ { flush(); path = value(substr($0, index($0, "path:"))); next }
/^[ \t]+permissions:/ { mode = value($0); next }
/^[ \t]+content:/ { content = value($0); next }
END { flush() }
