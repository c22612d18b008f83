// Every undici dispatcher Tarsier sends requests with is built here: layer downloads and registry
// requests (with the address policy), feed downloads, webhook deliveries (with TLS material and a
// proxy), and the CI scanner's calls to a server. Each caller states its timeouts, redirects, TLS
// and address policy; what undici does with them is decided in this one place.

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, interceptors, ProxyAgent, type Dispatcher } from 'undici';
import { AddressPolicy, RefusedAddressError, type AddressPolicySettings } from './address-policy.js';

export interface OutboundSettings {
  /** Connecting, TLS handshake included; unset: undici's default. */
  readonly connectTimeoutMs?: number;
  /** Waiting for the response headers; unset: undici's default. */
  readonly headersTimeoutMs?: number;
  /** Waiting between two chunks of the body; unset: undici's default. */
  readonly bodyTimeoutMs?: number;
  /** Redirects followed; unset: none, a 3xx is the answer. */
  readonly maxRedirects?: number;
  /** Which addresses may be reached, judged on every connection (every hop of a redirect); unset: any. */
  readonly addresses?: AddressPolicySettings & {
    /** @internal Name resolution, replaceable so tests can point names at local servers. */
    readonly lookup?: typeof dnsLookup | undefined;
  };
  /** Client TLS towards the servers reached. */
  readonly tls?: {
    readonly ca?: Buffer;
    readonly cert?: Buffer;
    readonly key?: Buffer;
    readonly serverName?: string;
  };
  /** An HTTP proxy URL every request goes through (with the TLS above towards the server and the proxy). */
  readonly proxy?: string;
}

/** A dispatcher with these settings; the caller closes (or destroys) it. */
export function outboundDispatcher(settings: OutboundSettings): Dispatcher {
  const tls = settings.tls;
  const connect = {
    ...(settings.connectTimeoutMs !== undefined ? { timeout: settings.connectTimeoutMs } : {}),
    ...(tls?.ca ? { ca: tls.ca } : {}),
    ...(tls?.cert ? { cert: tls.cert, key: tls.key } : {}),
    ...(tls?.serverName ? { servername: tls.serverName } : {}),
  };
  const timeouts = {
    ...(settings.headersTimeoutMs !== undefined ? { headersTimeout: settings.headersTimeoutMs } : {}),
    ...(settings.bodyTimeoutMs !== undefined ? { bodyTimeout: settings.bodyTimeoutMs } : {}),
  };
  let dispatcher: Dispatcher;
  if (settings.proxy !== undefined) {
    // The policy judges the addresses connected to, which behind a proxy is only the proxy.
    if (settings.addresses) throw new Error('an address policy cannot be kept through a proxy');
    dispatcher = new ProxyAgent({ uri: settings.proxy, requestTls: connect, connect, ...timeouts });
  } else if (settings.addresses) {
    const policy = new AddressPolicy(settings.addresses);
    const guarded = guardedConnector(policy, settings.addresses.lookup ?? dnsLookup, connect);
    dispatcher = new Agent({ ...timeouts, connect: guarded });
  } else {
    dispatcher = new Agent({ ...(Object.keys(connect).length > 0 ? { connect } : {}), ...timeouts });
  }
  // undici's redirect handler drops Authorization, Cookie and Proxy-Authorization when a redirect
  // changes origin, so a registry token never reaches the storage host of a presigned blob URL.
  return settings.maxRedirects === undefined
    ? dispatcher
    : dispatcher.compose(interceptors.redirect({ maxRedirections: settings.maxRedirects }));
}

/**
 * A connector that refuses addresses the policy refuses, at connection time, for every hop of a
 * redirect. IP literals are checked here because net.connect does not call `lookup` for them;
 * names are checked in the lookup, on the addresses actually connected to (no DNS-rebinding window).
 */
function guardedConnector(
  policy: AddressPolicy,
  resolveName: typeof dnsLookup,
  options: buildConnector.BuildOptions,
): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: guardedLookup(resolveName, policy) });
  return (connectOptions, callback) => {
    const refusal = isIP(connectOptions.hostname) !== 0 ? policy.refusal(connectOptions.hostname) : undefined;
    if (refusal !== undefined) {
      callback(new RefusedAddressError(connectOptions.hostname, refusal), null);
      return;
    }
    connect(connectOptions, callback);
  };
}

/** A net.connect lookup that fails when any address of the name is refused. */
function guardedLookup(resolveName: typeof dnsLookup, policy: AddressPolicy): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolveName(hostname, { ...options, all: true }, (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      // Refuse when any address is refused, so happy-eyeballs cannot pick that one.
      for (const a of addresses) {
        const refusal = policy.refusal(a.address);
        if (refusal !== undefined) return callback(new RefusedAddressError(a.address, refusal), '', 0);
      }
      const first = addresses[0];
      if (options.all) return callback(null, addresses);
      if (first === undefined) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      return callback(null, first.address, first.family);
    });
  };
}
