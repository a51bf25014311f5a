// Which server a URL in the connect bar points at, and whether it is the page's own. The inspector is
// served by a sandgym server and, unasked, talks only to that server: a link like
// /inspect?url=wss://elsewhere/ would otherwise make the real server's page connect to another host and
// then ask for the token, which would go to that host. Another origin needs the user's explicit yes
// (main.ts shows it and waits) before anything, a token included, is sent to it.

export type Target = { ok: true; origin: string; own: boolean } | { ok: false; error: string };

/** The WebSocket scheme of an http(s) or ws(s) URL scheme; null for anything else. */
function wsScheme(protocol: string): 'ws:' | 'wss:' | null {
  switch (protocol) {
    case 'ws:':
    case 'http:':
      return 'ws:';
    case 'wss:':
    case 'https:':
      return 'wss:';
    default:
      return null;
  }
}

/**
 * Classifies a server URL against the page's location: its origin (ws(s)://host[:port], the default
 * port omitted as URL does) and whether that is the page's own (same host and port, wss for an https
 * page and ws for an http one).
 */
export function classifyTarget(url: string, page: { protocol: string; host: string }): Target {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { ok: false, error: `not a server URL: '${url.slice(0, 200)}' (expected ws://host:port/v2/ws or wss://...)` };
  }
  const scheme = wsScheme(u.protocol);
  if (scheme === null || u.host === '') return { ok: false, error: `not a ws:// or wss:// URL: '${url.slice(0, 200)}'` };
  const origin = `${scheme}//${u.host}`;
  const own = `${page.protocol === 'https:' ? 'wss:' : 'ws:'}//${page.host.toLowerCase()}`;
  return { ok: true, origin, own: origin === own };
}
