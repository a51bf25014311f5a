// The S3-compatible store (AWS S3, MinIO...) through the AWS SDK v3 S3 client: its signing, retries and
// credential chain. Loaded only when an archive names an s3:// location.
import { GetObjectCommand, HeadBucketCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { isArchiveObject, type ArchiveStore, type S3Location, type S3Options } from './store-types.js';

/** An S3 bucket and prefix. Credentials: the SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, profiles, IMDS...). */
export class S3Store implements ArchiveStore {
  readonly location: string;
  private readonly client: S3Client;

  constructor(
    private readonly where: S3Location,
    opts: S3Options = {},
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.location = `s3://${where.bucket}${where.prefix ? `/${where.prefix}` : ''}`;
    const endpoint = opts.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
    this.client = new S3Client({
      region: opts.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      ...(endpoint ? { endpoint } : {}),
      forcePathStyle: opts.forcePathStyle ?? endpoint !== undefined,
      // The SDK retries throttling and 5xx itself; the writer retries a batch on top of it.
      maxAttempts: 3,
    });
  }

  private key(name: string): string {
    return this.where.prefix ? `${this.where.prefix}/${name}` : name;
  }

  /** The bucket exists and these credentials reach it (HeadBucket). */
  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.where.bucket }));
    } catch (e) {
      const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const why = status === 404 ? 'no such bucket' : status === 403 ? 'access denied (credentials?)' : (e as Error).message || (e as Error).name;
      throw new Error(`${this.location}: ${why}`, { cause: e });
    }
  }

  async put(name: string, body: Uint8Array): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.where.bucket, Key: this.key(name), Body: body, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' }),
    );
  }

  async list(): Promise<string[]> {
    const out: string[] = [];
    const base = this.where.prefix ? `${this.where.prefix}/` : '';
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: base, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const o of page.Contents ?? []) if (o.Key && isArchiveObject(o.Key)) out.push(o.Key.slice(base.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out.sort();
  }

  async get(name: string): Promise<Uint8Array> {
    const r = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: this.key(name) }));
    if (!r.Body) throw new Error(`${this.location}/${name}: empty response body`);
    return r.Body.transformToByteArray();
  }

  destroy(): void {
    this.client.destroy();
  }
}
