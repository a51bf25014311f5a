// Bearer-token check. Tokens are compared as SHA-256 digests with timingSafeEqual against every
// configured token (no early exit), so neither the length nor a prefix of a token leaks by timing.
import { createHash, timingSafeEqual } from 'node:crypto';

export class TokenChecker {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  get enabled(): boolean {
    return this.digests.length > 0;
  }

  check(candidate: string | undefined | null): boolean {
    if (!this.enabled) return true;
    if (typeof candidate !== 'string' || candidate.length === 0) return false;
    const d = digest(candidate);
    let ok = false;
    for (const known of this.digests) ok = timingSafeEqual(d, known) || ok;
    return ok;
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** The token from an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}
