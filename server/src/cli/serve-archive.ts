// `sandgym serve --archive ...`: the archive's flags, their help lines and their checks, kept apart from
// serve.ts so the archive's options are declared once (docs/OBSERVABILITY.md, "Trajectory archive").
import { ARCHIVE_DEFAULTS, type ArchiveOptions } from '../observability/archive/options.js';
import { parseS3Url } from '../observability/archive/store.js';
import { intValue, nonEmptyValue, UsageError } from './args.js';

export const ARCHIVE_OPTIONS = {
  archive: { type: 'string' },
  'archive-s3-endpoint': { type: 'string' },
  'archive-s3-region': { type: 'string' },
  'archive-max-mb': { type: 'string' },
  'archive-tenant-max-mb': { type: 'string' },
  'archive-flush-ms': { type: 'string' },
} as const;

export const ARCHIVE_HELP = `  --archive <dir|s3://bucket/prefix>
                         keep every finished episode (actions, observations, rewards,
                         info, outcome, grading report, code-v0's graded workspace) as
                         gzip JSONL batches in a directory or an S3-compatible bucket
                         (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; endpoint:
                         AWS_ENDPOINT_URL_S3 or --archive-s3-endpoint); hello reports
                         archive: true; flushed on SIGTERM/SIGINT (docs/OBSERVABILITY.md)
  --archive-s3-endpoint <url>  S3-compatible endpoint (e.g. MinIO); path-style addressing
  --archive-s3-region <r>      S3 region (default AWS_REGION, else us-east-1)
  --archive-max-mb <n>   memory the archive may hold before it drops (and counts)
                         episodes (default ${ARCHIVE_DEFAULTS.max_bytes / 1024 / 1024})
  --archive-tenant-max-mb <n>  of which one token's sessions may hold at most this
                         much (default a quarter of --archive-max-mb); past it that
                         token's episode loses its steps (steps_omitted tenant_memory)
  --archive-flush-ms <n> write a batch at most this long after an episode ends
                         (default ${ARCHIVE_DEFAULTS.flush_ms})`;

type Values = { [K in keyof typeof ARCHIVE_OPTIONS]?: string };

/** The archive options of a serve command line, or null without --archive. Throws UsageError. */
export function archiveOptionsFromValues(values: Values, cmd: string): ArchiveOptions | null {
  if (values.archive === undefined) {
    const stray = (['archive-s3-endpoint', 'archive-s3-region', 'archive-max-mb', 'archive-tenant-max-mb', 'archive-flush-ms'] as const).find(
      (k) => values[k] !== undefined,
    );
    if (stray) throw new UsageError(`--${stray} needs --archive`, cmd);
    return null;
  }
  const location = nonEmptyValue('archive', values.archive, cmd);
  const s3 = parseS3Url(location);
  if (s3 instanceof Error) throw new UsageError(`--archive ${s3.message}`, cmd);
  if (s3 === null && (values['archive-s3-endpoint'] !== undefined || values['archive-s3-region'] !== undefined)) {
    throw new UsageError('--archive-s3-endpoint and --archive-s3-region need an s3:// --archive', cmd);
  }
  const endpoint = values['archive-s3-endpoint'];
  if (endpoint !== undefined && !/^https?:\/\/[^/]+/.test(endpoint))
    throw new UsageError(`--archive-s3-endpoint must be an http:// or https:// URL, got '${endpoint}'`, cmd);
  const region = values['archive-s3-region'] === undefined ? undefined : nonEmptyValue('archive-s3-region', values['archive-s3-region'], cmd);
  const opts: ArchiveOptions = { location };
  if (s3 !== null && (endpoint !== undefined || region !== undefined))
    opts.s3 = { ...(endpoint !== undefined ? { endpoint } : {}), ...(region !== undefined ? { region } : {}) };
  if (values['archive-max-mb'] !== undefined) opts.max_bytes = intValue('archive-max-mb', values['archive-max-mb'], 1, 1024 * 1024, cmd) * 1024 * 1024;
  if (values['archive-tenant-max-mb'] !== undefined)
    opts.max_tenant_bytes = intValue('archive-tenant-max-mb', values['archive-tenant-max-mb'], 1, 1024 * 1024, cmd) * 1024 * 1024;
  if (opts.max_tenant_bytes !== undefined && opts.max_tenant_bytes > (opts.max_bytes ?? ARCHIVE_DEFAULTS.max_bytes)) {
    throw new UsageError(
      `--archive-tenant-max-mb (${opts.max_tenant_bytes / 1024 / 1024}) cannot be larger than --archive-max-mb (${(opts.max_bytes ?? ARCHIVE_DEFAULTS.max_bytes) / 1024 / 1024})`,
      cmd,
    );
  }
  if (values['archive-flush-ms'] !== undefined) opts.flush_ms = intValue('archive-flush-ms', values['archive-flush-ms'], 1, 3600_000, cmd);
  return opts;
}
