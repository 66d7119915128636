-- A token bucket, refilled and taken from in one step.
-- KEYS[1]: the bucket, a hash of tokens (what it holds) and ts (when it
--          last refilled, in microseconds).
-- ARGV:    now (microseconds), rate (tokens a second), burst, cost,
--          ttl (milliseconds; an untouched bucket is full by then).
-- Returns {1, 0} when cost was taken, else {0, wait}: microseconds until
-- it can be.
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])

local held = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(held[1])
local ts = tonumber(held[2])
if tokens == nil or ts == nil then
	tokens, ts = burst, now
end
-- Clocks of several servers differ a little: time never runs backwards.
if now > ts then
	tokens = math.min(burst, tokens + (now - ts) * rate / 1e6)
	ts = now
end

local taken, wait = 0, 0
if tokens >= cost then
	tokens = tokens - cost
	taken = 1
else
	wait = math.ceil((cost - tokens) * 1e6 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%d', ts))
redis.call('PEXPIRE', KEYS[1], ttl)
return {taken, wait}
