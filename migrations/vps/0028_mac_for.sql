-- mac_for is the MAC of a leased IPv4 address, locally administered and
-- derived from the address (02:bc: and its four octets), so an address
-- always has the same MAC. It lives here, not in Go, so that placement
-- picks the address and writes the lease in one statement.

-- +goose Up
CREATE FUNCTION mac_for(a inet) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT '02:bc:' || string_agg(lpad(to_hex(o::int), 2, '0'), ':' ORDER BY i)
    FROM unnest(string_to_array(host(a), '.')) WITH ORDINALITY AS t(o, i)
$$;

-- +goose Down
DROP FUNCTION mac_for(inet);
