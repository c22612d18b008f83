import { BlockList, isIP } from 'node:net';

/**
 * Which addresses a download chosen by a client (a layer URL, later a registry) may connect to.
 * Clients choose those URLs, so an open server is otherwise a probe into its own network:
 *
 * - link-local and cloud metadata addresses are never reached (instance credentials live
 *   there), whatever the configuration;
 * - private, loopback and other internal ranges are refused when clair.indexer.denyprivate is on;
 * - clair.indexer.allownetworks (CIDRs) lifts both for the networks it lists, e.g. an internal
 *   registry at 10.20.0.0/16 with denyprivate on.
 *
 * Judged on the address actually connected to (see dispatcher.ts), so redirects and DNS answers that
 * change between lookups cannot slip past.
 */
export type Refusal = 'link-local' | 'private' | 'not-an-address';

type Range = readonly [network: string, prefix: number];

/** Never reached unless allowed: link-local and the metadata services that live at fixed addresses. */
const LINK_LOCAL_IPV4: readonly Range[] = [
  ['169.254.0.0', 16], // link-local: AWS, GCP, Azure, OpenStack metadata at 169.254.169.254
  ['100.100.100.200', 32], // Alibaba Cloud metadata
];
const LINK_LOCAL_IPV6: readonly Range[] = [
  ['fe80::', 10], // link-local
  ['fd00:ec2::254', 128], // AWS metadata over IPv6
];

/** Refused when clair.indexer.denyprivate is on. */
const PRIVATE_IPV4: readonly Range[] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
const PRIVATE_IPV6: readonly Range[] = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
];
/** IPv6 prefixes that embed an IPv4 address in their last 32 bits: judged by that address. */
const IPV4_EMBEDDING_PREFIXES = ['::ffff:', '::', '64:ff9b::']; // mapped, compatible, NAT64

function blockList(ipv4: readonly Range[], ipv6: readonly Range[]): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ipv4) {
    list.addSubnet(network, prefix, 'ipv4');
    for (const embedding of IPV4_EMBEDDING_PREFIXES) list.addSubnet(`${embedding}${network}`, 96 + prefix, 'ipv6');
  }
  for (const [network, prefix] of ipv6) list.addSubnet(network, prefix, 'ipv6');
  return list;
}

const linkLocal = blockList(LINK_LOCAL_IPV4, LINK_LOCAL_IPV6);
const privateRanges = blockList(PRIVATE_IPV4, PRIVATE_IPV6);

/** An address as connect() sees it: without brackets or an IPv6 zone id. */
function bare(ip: string): string {
  return ip.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
}

/**
 * A connection the address policy refused: the address and why. Beside the policy, not the
 * dispatcher that enforces it, so that code telling this error apart loads no HTTP client.
 */
export class RefusedAddressError extends Error {
  constructor(
    readonly address: string,
    readonly refusal: Refusal,
  ) {
    super(`${address}: ${refusal}`);
    this.name = 'RefusedAddressError';
  }
}

/** A network in CIDR form ("10.20.0.0/16", "fd00::/8") or a single address; undefined when it is neither. */
export function parseNetwork(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', prefixText] = text.trim().split('/');
  const family = isIP(bare(address));
  if (family === 0) return undefined;
  const max = family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return undefined;
  return { address: bare(address), prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
}

export interface AddressPolicySettings {
  /** Refuse private, loopback and other internal ranges (link-local ones always are). */
  readonly denyPrivate: boolean;
  /** Networks (CIDRs, checked with parseNetwork) reached even when the rules above would refuse them. */
  readonly allowNetworks?: readonly string[] | undefined;
}

export class AddressPolicy {
  readonly #denyPrivate: boolean;
  readonly #allowed = new BlockList();

  /** allowNetworks: CIDRs checked with parseNetwork (the configuration refuses others). */
  constructor(settings: AddressPolicySettings) {
    this.#denyPrivate = settings.denyPrivate;
    for (const text of settings.allowNetworks ?? []) {
      const network = parseNetwork(text);
      if (!network) throw new Error(`${text} is not a network (CIDR) or an address`);
      this.#allowed.addSubnet(network.address, network.prefix, network.family);
    }
  }

  /** Why a connection to ip is refused, or undefined when it may go ahead. */
  refusal(ip: string): Refusal | undefined {
    const address = bare(ip);
    const family = isIP(address);
    if (family === 0) return 'not-an-address'; // fail closed
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (this.#allowed.check(address, type)) return undefined;
    if (linkLocal.check(address, type)) return 'link-local';
    if (this.#denyPrivate && privateRanges.check(address, type)) return 'private';
    return undefined;
  }
}
