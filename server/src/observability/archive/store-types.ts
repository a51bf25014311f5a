// What both archive stores share (store.ts: a local directory; s3-store.ts: a bucket): the store
// interface, which objects a reader takes, and the S3 location and options. Apart from store.ts so
// s3-store.ts (imported lazily by store.ts, only when an s3:// archive is configured) does not import it back.

export interface ArchiveStore {
  /** For messages: the directory or s3://bucket/prefix. */
  readonly location: string;
  /** Writes one whole object; `name` is relative to the archive root (a/b/c.jsonl.gz). */
  put(name: string, body: Uint8Array): Promise<void>;
  /** Every object name under the archive root, sorted. */
  list(): Promise<string[]>;
  get(name: string): Promise<Uint8Array>;
  /** Releases connections (S3); a no-op for a directory. */
  destroy?(): void;
  /** Fails (with the store's own error) when objects cannot be written there: checked once at start. */
  check(): Promise<void>;
}

/** Objects a reader takes (batches written by the archive; a plain .jsonl is accepted for hand-made files). */
export const isArchiveObject = (name: string): boolean => name.endsWith('.jsonl.gz') || name.endsWith('.jsonl');

export interface S3Location {
  bucket: string;
  /** '' or a prefix without leading/trailing slashes. */
  prefix: string;
}

export interface S3Options {
  /** An S3-compatible endpoint (MinIO...); default from AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else AWS. */
  endpoint?: string;
  /** Default AWS_REGION / AWS_DEFAULT_REGION, else us-east-1 (what S3-compatible servers expect). */
  region?: string;
  /** Path-style addressing (bucket in the path); default: on when an endpoint is configured. */
  forcePathStyle?: boolean;
}
