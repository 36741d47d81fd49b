-- leaky_bucket.lua: the leaky bucket as a queue is the GCRA of gcra.lua
-- whose admitted requests are given the wait for their slot (limiter.gcra).
algorithms['leaky_bucket'] = function(key, t, burst, n, alone)
  return gcra(key, t, burst, n, alone, true)
end
