// The trajectory archive wired into a server: `installArchive(app, options)` subscribes the recorder to
// the episode hook, announces `archive: true` in hello and flushes on the app's close (the shutdown path
// of SIGTERM/SIGINT in `sandgym serve`: sessions are closed first, so running episodes are archived as
// `closed`, then every batch is written before the process exits).
import type { SandgymApp } from '../../app.js';
import type { ArtifactEvent } from '../episode-events.js';
import { registerArchiveMetrics } from './metrics.js';
import { EpisodeRecorder } from './recorder.js';
import { ARCHIVE_DEFAULTS, type ArchiveOptions } from './options.js';
import { openStore, type ArchiveStore } from './store.js';
import { ArchiveWriter, type ArchiveStats } from './writer.js';

export { ARCHIVE_DEFAULTS, type ArchiveOptions } from './options.js';
export { ARCHIVE_FORMAT, ArchiveFormatError, type EpisodeEnd, type EpisodeRecord } from './format.js';
export type { ArchiveStats } from './writer.js';

export interface Archive {
  readonly store: ArchiveStore;
  readonly recorder: EpisodeRecorder;
  stats(): ArchiveStats;
  /** Writes every finished episode; resolves when the store has them. */
  flush(): Promise<void>;
}

export async function createArchive(
  opts: ArchiveOptions,
  log: { warn(o: object, m: string): void; error(o: object, m: string): void },
  given?: ArchiveStore,
): Promise<Archive> {
  const store = given ?? (await openStore(opts));
  const writer = new ArchiveWriter({
    store,
    maxBytes: opts.max_bytes ?? ARCHIVE_DEFAULTS.max_bytes,
    maxTenantBytes: opts.max_tenant_bytes ?? Math.floor((opts.max_bytes ?? ARCHIVE_DEFAULTS.max_bytes) * ARCHIVE_DEFAULTS.tenant_share),
    batchBytes: opts.batch_bytes ?? ARCHIVE_DEFAULTS.batch_bytes,
    flushMs: opts.flush_ms ?? ARCHIVE_DEFAULTS.flush_ms,
    log,
  });
  const recorder = new EpisodeRecorder(writer, {
    maxEpisodeBytes: opts.max_episode_bytes ?? ARCHIVE_DEFAULTS.max_episode_bytes,
    maxWorkspaceBytes: opts.max_workspace_bytes ?? ARCHIVE_DEFAULTS.max_workspace_bytes,
  });
  return {
    store,
    recorder,
    stats: () => writer.stats(),
    // Episodes are handed to the writer as they finish: flushing the writer is flushing the archive.
    flush: () => writer.flush(),
  };
}

/** Installs an archive on a built (not yet listening) app. */
export async function installArchive(sg: SandgymApp, opts: ArchiveOptions): Promise<Archive> {
  const archive = await createArchive(opts, sg.app.log);
  sg.core.observers.add(archive.recorder);
  // Artifacts (code-v0's graded workspace) reach the recorder through EnvContext.artifacts.
  sg.core.observers.artifacts = (e: ArtifactEvent) => archive.recorder.onArtifact(e);
  // Its counters on /metrics (when the server keeps metrics), read at scrape time.
  if (sg.observability) registerArchiveMetrics(sg.observability.metrics.registry, () => archive.stats());
  // Capabilities are fixed before the server listens; every hello after this one says so.
  sg.core.helloResult.capabilities.archive = true;
  // onClose runs after preClose (core.shutdown: every session closed, so every episode finished).
  sg.app.addHook('onClose', async () => {
    await archive.flush();
    const s = archive.stats();
    const dropped = Object.values(s.episodes_dropped).reduce((a, b) => a + b, 0);
    sg.app.log.info(
      { archive: s.location, episodes_written: s.episodes_written, objects_written: s.objects_written, episodes_dropped: dropped },
      'archive flushed',
    );
    archive.store.destroy?.();
  });
  sg.app.log.info({ archive: archive.store.location }, 'archiving every finished episode');
  return archive;
}
