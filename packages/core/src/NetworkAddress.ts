import ipaddr from 'ipaddr.js'

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number]

/**
 * True when `address` (an IPv4 or IPv6 literal) is a public unicast address: not private, loopback, link-local,
 * unique-local, carrier-grade NAT, multicast, reserved, documentation or unspecified, and not an IPv4 one of those
 * written as IPv6 (mapped). Addresses that embed another (6to4, Teredo, NAT64) are refused too: where they lead is
 * not this address. Classified by ipaddr.js's ranges. False for anything that is not an IP literal.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  if (!ipaddr.isValid(bare)) return false
  let parsed = ipaddr.parse(bare)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  // IPv6 beyond global unicast (2000::/3) is not public, whatever its range says: `::7f00:1`, the deprecated
  // IPv4-compatible form of 127.0.0.1, ranges as unicast.
  if (parsed.kind() === 'ipv6' && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST)) return false
  return parsed.range() === 'unicast'
}

/** True when `host` (a URL's hostname) is an IP literal rather than a name. */
export function isAddressLiteral(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  return ipaddr.isValid(bare)
}
