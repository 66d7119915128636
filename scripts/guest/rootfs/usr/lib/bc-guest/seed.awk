# Flattens the NoCloud meta-data and network-config that
# drivers/runtime/nocloud/seed.go writes into lines the init reads:
#   hostname NAME       local-hostname
#   key LINE            each item of public-keys
#   mac MAC             ethernets.*.match.macaddress
#   addr CIDR           each item of ethernets.*.addresses
#   gw IP               routes[].via (or gateway4)
#   dns IP              each item of nameservers.addresses
# Values may be JSON/YAML double-quoted (as seed.go writes them), single-
# quoted or plain. It reads this subset of YAML, not YAML.

function unquote(v) {
	sub(/^[ \t]+/, "", v)
	sub(/[ \t]+$/, "", v)
	if (v ~ /^".*"$/) {
		v = substr(v, 2, length(v) - 2)
		gsub(/\\u003c/, "<", v)
		gsub(/\\u003e/, ">", v)
		gsub(/\\u0026/, "\\&", v)
		gsub(/\\"/, "\"", v)
		gsub(/\\\\/, "\\", v)
	} else if (v ~ /^'.*'$/) {
		v = substr(v, 2, length(v) - 2)
	}
	return v
}

function indent(s) { match(s, /^ */); return RLENGTH }

FNR == 1 { list = ""; ns = -1 }
{ sub(/\r$/, "") }
/^[ \t]*(#|$)/ { next }

# A list item: keep it if we are in a list we want.
/^[ \t]*-[ \t]/ {
	if (list != "") {
		v = $0
		sub(/^[ \t]*-[ \t]*/, "", v)
		print list, unquote(v)
	}
	next
}

# A "key: value" line.
{
	key = $0
	sub(/^[ \t]*/, "", key)
	sub(/:.*/, "", key)
	val = $0
	sub(/^[^:]*:/, "", val)
	val = unquote(val)
	if (ns >= 0 && indent($0) <= ns) ns = -1 # left nameservers:
	list = ""
}
key == "local-hostname"              { print "hostname", val }
key == "public-keys"                 { list = "key" }
key == "macaddress"                  { print "mac", val }
key == "via" || key == "gateway4"    { print "gw", val }
key == "nameservers"                 { ns = indent($0) }
key == "addresses" && val == ""      { list = ns >= 0 ? "dns" : "addr" }
