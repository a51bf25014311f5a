// The archive's options and defaults, declared once: a module without dependencies, so `sandgym serve`
// parses --archive flags without loading the archive (or the AWS SDK).
import type { S3Options } from './store.js';

export interface ArchiveOptions {
  /** A directory or s3://bucket/prefix. */
  location: string;
  s3?: S3Options;
  /** Serialised bytes held in memory at most; beyond: episodes dropped and counted (docs/OBSERVABILITY.md). */
  max_bytes?: number;
  /**
   * Of which one tenant (a token; a connection on a server without tokens) may hold at most this many;
   * default a quarter of max_bytes, so one token cannot fill the buffer the others need.
   */
  max_tenant_bytes?: number;
  /** A batch object is written at this many uncompressed bytes... */
  batch_bytes?: number;
  /** ...or this long after its first episode finished. */
  flush_ms?: number;
  /** One episode larger than this is dropped. */
  max_episode_bytes?: number;
  /** A final workspace larger than this is recorded by size only. */
  max_workspace_bytes?: number;
}

export const ARCHIVE_DEFAULTS = {
  max_bytes: 256 * 1024 * 1024,
  /** max_tenant_bytes when not given, as a share of max_bytes. */
  tenant_share: 0.25,
  batch_bytes: 8 * 1024 * 1024,
  flush_ms: 5000,
  max_episode_bytes: 64 * 1024 * 1024,
  max_workspace_bytes: 8 * 1024 * 1024,
} as const;
