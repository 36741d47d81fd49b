package scenarios

import (
	"regexp"
	"strings"
)

var namePart = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func (v *validator) identities(r *rawIdentities) Identities {
	id := Identities{Count: 1, Distribution: Uniform, Carry: APIKey}
	if r.Count != nil {
		id.Count = *r.Count
		if id.Count < 1 || id.Count > MaxIdentities {
			v.fail("identities.count", "%d: want 1 to %d", id.Count, MaxIdentities)
		}
	}
	if r.Carry != "" {
		id.Carry = Carry(r.Carry)
	}
	switch id.Carry {
	case APIKey:
		id.Header = DefaultAPIKeyHeader
	case Bearer:
		id.Header = "Authorization"
	case Cookie:
		id.Header, id.Name = "Cookie", DefaultIdentityName
	case Query:
		id.Name = DefaultIdentityName
	case ClientIP:
		id.Header, id.IPVersion, id.TrustedHops = DefaultClientIPHeader, 4, 1
	default:
		v.fail("identities.carry", "unknown %q; use %s", r.Carry, joinStrings(carries))
	}
	if r.Header != "" {
		switch {
		case id.Carry != APIKey && id.Carry != ClientIP:
			v.fail("identities.header", "only api_key and client_ip take a header; %s has its own place", id.Carry)
		case !headerPattern.MatchString(r.Header):
			v.fail("identities.header", "%q is not a header name", r.Header)
		}
		id.Header = r.Header
	}
	if r.Name != "" {
		switch {
		case id.Carry != Query && id.Carry != Cookie:
			v.fail("identities.name", "only query and cookie take a name (of the parameter or cookie)")
		case !namePart.MatchString(r.Name):
			v.fail("identities.name", "%q: use letters, digits, '_', '.' and '-'", r.Name)
		}
		id.Name = r.Name
	}
	if r.Fixed != nil {
		id.Fixed = *r.Fixed
	}
	if r.KeysFile != "" {
		switch {
		case id.Carry == ClientIP:
			v.fail("identities.keys_file", "client addresses are generated; keys_file holds API keys or tokens")
		case r.Fixed != nil && !id.Fixed:
			v.fail("identities.fixed", "false, but keys from a file are the same in every run")
		default:
			id.KeysFile = r.KeysFile
			id.Keys = v.keysFile("identities.keys_file", r.KeysFile, id.Carry)
			id.Fixed = true
			switch {
			case r.Count == nil:
				id.Count = len(id.Keys)
			case len(id.Keys) > 0 && id.Count > len(id.Keys):
				v.fail("identities.count", "%d, but %s holds %d keys", id.Count, r.KeysFile, len(id.Keys))
			}
			if id.Count > MaxIdentities {
				v.fail("identities.keys_file", "%s holds %d keys, above the %d identities a scenario may have; give a count", r.KeysFile, id.Count, MaxIdentities)
			}
		}
	}
	v.groups(r, &id)
	v.distribution(r, &id)
	v.addresses(r, &id)
	if r.SpoofForwarded {
		switch {
		case id.Carry != ClientIP:
			v.fail("identities.spoof_forwarded_for", "needs carry: client_ip; an API key has no X-Forwarded-For to spoof")
		case !strings.EqualFold(id.Header, DefaultClientIPHeader):
			v.fail("identities.spoof_forwarded_for", "needs the identity in X-Forwarded-For, not %s", id.Header)
		}
		id.SpoofForwarded = true
	}
	return id
}

// distribution validates how requests are spread over identities.
func (v *validator) distribution(r *rawIdentities, id *Identities) {
	if r.Distribution != "" {
		id.Distribution = Distribution(r.Distribution)
	}
	switch id.Distribution {
	case Uniform:
	case Hot:
		switch {
		case r.Share == nil:
			v.fail("identities.share", "missing; a hot distribution needs the hot identity's share, such as 0.8")
		case !(*r.Share > 0 && *r.Share < 1):
			v.fail("identities.share", "%v: want a fraction strictly between 0 and 1", *r.Share)
		case id.Count < 2:
			v.fail("identities.count", "%d: a hot distribution needs at least 2 identities", id.Count)
		default:
			id.Share = *r.Share
		}
	case Zipf:
		switch {
		case r.S == nil:
			v.fail("identities.s", "missing; a zipf distribution needs its exponent s, such as 1.1")
		case !(*r.S > 1) || *r.S > 100:
			v.fail("identities.s", "%v: the zipf exponent must be above 1 (and at most 100)", *r.S)
		default:
			id.S = *r.S
		}
	default:
		v.fail("identities.distribution", "unknown %q; use uniform, hot or zipf", r.Distribution)
	}
	if r.Share != nil && id.Distribution != Hot {
		v.fail("identities.share", "only a hot distribution takes a share")
	}
	if r.S != nil && id.Distribution != Zipf {
		v.fail("identities.s", "only a zipf distribution takes s")
	}
}

// addresses validates the client address fields: ip_version, prefix and
// trusted_hops, which only client_ip takes.
func (v *validator) addresses(r *rawIdentities, id *Identities) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"ip_version", r.IPVersion != nil}, {"prefix", r.Prefix != nil}, {"trusted_hops", r.TrustedHops != nil}} {
		if f.set && id.Carry != ClientIP {
			v.fail("identities."+f.name, "only carry: client_ip takes %s", f.name)
		}
	}
	if id.Carry != ClientIP {
		return
	}
	if r.IPVersion != nil {
		id.IPVersion = *r.IPVersion
		if id.IPVersion != 4 && id.IPVersion != 6 {
			v.fail("identities.ip_version", "%d: use 4 or 6", id.IPVersion)
			return
		}
	}
	if r.Prefix != nil {
		id.Prefix = *r.Prefix
		lo, hi := ipv4Base.Bits()+1, 32
		if id.IPVersion == 6 {
			lo, hi = ipv6RunBits+1, 128
		}
		if id.Prefix < lo || id.Prefix > hi {
			v.fail("identities.prefix", "%d: an IPv%d identity block is a prefix of %d to %d bits (64: an IPv6 /64)", id.Prefix, id.IPVersion, lo, hi)
			return
		}
	}
	if b := id.Blocks(); uint64(id.Count) >= b {
		field := "identities.count"
		if r.Prefix != nil {
			field = "identities.prefix"
		}
		v.fail(field, "%d identities (and the probe's) do not fit in the %d blocks of /%d the client address plan holds; use fewer identities or a longer prefix", id.Count, b, id.numberingBits())
	}
	if r.TrustedHops != nil {
		id.TrustedHops = *r.TrustedHops
		switch {
		case id.TrustedHops < 1 || id.TrustedHops > MaxTrustedHops:
			v.fail("identities.trusted_hops", "%d: want 1 (the target trusts only the connection from rlbench) to %d", id.TrustedHops, MaxTrustedHops)
		case !strings.EqualFold(id.Header, DefaultClientIPHeader):
			v.fail("identities.trusted_hops", "needs the identity in X-Forwarded-For, not %s: only a chain has hops", id.Header)
		}
	}
}

// identitiesFit checks the identities against the rest of the scenario:
// route headers and query strings the carry sets too, the carries the
// sample API reads, and a key for the retry_after_probe of its own.
func (v *validator) identitiesFit(r *rawIdentities, s *Scenario) {
	id := &s.Identities
	v.routeConflicts(s.Target, *id)
	if s.Target.Instances > 0 && s.Target.Peer == "" {
		// The sample API reads "Authorization: Bearer KEY" or X-API-Key,
		// or the client address from X-Forwarded-For.
		switch {
		case id.Carry == Query || id.Carry == Cookie:
			v.fail("identities.carry", "the sample API reads API keys from X-API-Key or Authorization: Bearer; carry %s needs an external target", id.Carry)
		case id.Carry == APIKey && !strings.EqualFold(id.Header, DefaultAPIKeyHeader):
			v.fail("identities.header", "the sample API reads API keys from %s or Authorization: Bearer, not %s", DefaultAPIKeyHeader, id.Header)
		case id.Carry == ClientIP && !strings.EqualFold(id.Header, DefaultClientIPHeader):
			v.fail("identities.header", "the sample API reads client addresses from %s, not %s", DefaultClientIPHeader, id.Header)
		}
	}
	if !probeSets(s)[""] || len(id.Keys) == 0 {
		return
	}
	switch {
	case r.Count != nil && id.Ungrouped() >= len(id.Keys):
		v.fail("identities.count", "%d uses every key of %s, but a retry_after_probe needs one no other phase uses; give at most %d", id.Count, id.KeysFile, len(id.Keys)-1)
	case r.Count == nil && len(id.Keys) < 2:
		v.fail("identities.keys_file", "%s holds one key, but a retry_after_probe needs one of its own beside it", id.KeysFile)
	case r.Count == nil:
		id.Count-- // the last key is the probe's
	}
}
