// The sandbox pod, as one pure function of its parameters: reviewable in one place, validated against a
// real API server with server-side dry run (server/test/sandbox/kubernetes-pod-spec.test.ts), and the
// same hardening as the Docker driver's host-config.ts wherever Kubernetes can express it
// (docs/SANDBOX.md, "Kubernetes").
import type { V1Pod, V1Toleration } from '@kubernetes/client-node';
import { AGENT_IO_DIR, AGENT_SCRIPT, AGENT_STATE_DIR } from '../channel/agent-script.js';
import { containerMemoryMb } from '../driver-support.js';
import { IO_DIR_MB } from '../judge-reserve.js';
import type { SandboxLimits } from '../types.js';

/** Label keys (selectors) and annotation keys (values that are not label-safe). */
export const K8S_LABEL = {
  managed: 'sandgym.io/managed',
  owner: 'sandgym.io/owner',
  server: 'sandgym.io/server',
  /** The sandbox's agent uid, a label so that a driver can find the pods that use one (kubernetes-driver.ts). */
  agentUid: 'sandgym.io/agent-uid',
} as const;
export const K8S_ANNOTATION = {
  pool: 'sandgym.io/pool',
  expires: 'sandgym.io/expires',
  memory: 'sandgym.io/memory-mb',
  agentUid: 'sandgym.io/agent-uid',
} as const;

export const SANDBOX_CONTAINER = 'sandbox';
export const NETWORK_INIT_CONTAINER = 'no-network';
/** Where the boot script writes the pid-1 launcher (a judge-only emptyDir). */
export const INIT_DIR = '/run/sandgym-init';

export type ImagePullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export interface PodParams {
  name: string;
  namespace: string;
  image: string;
  workspace: string;
  limits: SandboxLimits;
  /** The agent identity; recorded in an annotation for diagnostics, enforced inside by the channel. */
  agentUid: number;
  /** label key -> value (already label-safe). */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  tmpSizeMb: number;
  imagePullPolicy: ImagePullPolicy;
  /** Image of the init container that removes the pod's network interfaces; must have `ip` (busybox). */
  networkInitImage: string;
  /** CPU request as a fraction of the limit (memory is always requested in full). */
  cpuRequestRatio: number;
  /** Writable-layer and log budget of the container (its root filesystem is read-only). */
  ephemeralStorageMb: number;
  /** Hard lifetime: the kubelet kills the pod after this (the `expires` annotation is the same instant). */
  activeDeadlineSeconds: number;
  runtimeClassName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
  /** The server's own pod, when it runs in one in the same namespace: deleting it deletes its sandboxes. */
  owner?: { name: string; uid: string };
}

/**
 * Runs as the container's command, as uid 0 with only SETUID, SETGID and KILL. First it drops the
 * KUBERNETES_SERVICE_* / KUBERNETES_PORT* variables: the kubelet puts the API server's address into every
 * container's environment even with enableServiceLinks off, and agent commands inherit the judge's
 * environment (the sandbox cannot reach it, but it should not be told where the cluster is). emptyDir volumes are
 * created 0777: give each its Docker tmpfs mode first (the agent refuses to start on a state
 * directory the agent uid could read or write). Kubernetes has no ulimits in the pod spec, so the
 * limits Docker sets with `Ulimits` are set here and inherited (uid 0 is exempt from RLIMIT_NPROC;
 * the agent uid is not). Then pid 1 becomes a tiny launcher named `sandgym-init` (a script file: the
 * kernel names the process after it), the name the agent's kill-all guard accepts, so the lease
 * watchdog can end the whole sandbox; the launcher hands its stdin (the attach stream) to the agent and
 * exits with it, which ends the container.
 */
export const BOOT_SCRIPT = String.raw`
st=$1; io=$2; ws=$3; nf=$4; np=$5; in=$6; ag=$7
while IFS='=' read -r k _; do case "$k" in KUBERNETES_*) unset "$k" ;; esac; done <<SANDGYM_ENV
$(env)
SANDGYM_ENV
chmod 0700 "$st" "$in" && chmod 0711 "$io" && chmod 1777 "$ws" /tmp || { echo "sandgym-boot: cannot set the modes of the sandbox volumes" >&2; exit 110; }
ulimit -c 0 2>/dev/null
ulimit -n "$nf" || { echo "sandgym-boot: cannot set RLIMIT_NOFILE" >&2; exit 110; }
ulimit -u "$np" 2>/dev/null || ulimit -p "$np" || { echo "sandgym-boot: cannot set RLIMIT_NPROC" >&2; exit 110; }
printf '%s\n' '#!/bin/sh' \
  'trap "kill -s KILL -1 2>/dev/null; exit 143" TERM' \
  'exec 3<&0' \
  '/bin/sh -c "$3" sandgym-agent "$1" "$2" attach <&3 3<&- &' \
  'exec 3<&- </dev/null' \
  'wait $!' >"$in/sandgym-init" && chmod 0700 "$in/sandgym-init" || { echo "sandgym-boot: cannot write the init launcher" >&2; exit 110; }
exec "$in/sandgym-init" "$st" "$io" "$ag"
`;

/** Removes every interface but loopback: the sandbox container then has no network at all. */
export const NETWORK_INIT_SCRIPT = String.raw`
for i in $(ls /sys/class/net); do
  [ "$i" = lo ] && continue
  ip link delete "$i" 2>/dev/null || ip link set "$i" down || { echo "no-network: cannot remove $i" >&2; exit 1; }
done
for i in $(ls /sys/class/net); do
  [ "$i" = lo ] || [ "$(cat /sys/class/net/$i/operstate)" = down ] || { echo "no-network: $i is still up" >&2; exit 1; }
done
`;

/** Container memory: the same arithmetic as Docker's (driver-support.ts). */
export const podMemoryMb = containerMemoryMb;

function milliCpu(cpus: number): string {
  return `${Math.max(1, Math.round(cpus * 1000))}m`;
}

export function buildPodSpec(p: PodParams): V1Pod {
  const memMi = podMemoryMb(p.limits, p.tmpSizeMb);
  const dropAll = { drop: ['ALL'] };
  const memVolume = (name: string, mb: number) => ({ name, emptyDir: { medium: 'Memory', sizeLimit: `${mb}Mi` } });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: p.name,
      namespace: p.namespace,
      labels: p.labels,
      annotations: p.annotations,
      ...(p.owner
        ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: p.owner.name, uid: p.owner.uid, controller: false, blockOwnerDeletion: false }] }
        : {}),
    },
    spec: {
      restartPolicy: 'Never',
      // A sandbox needs no API access and no discovery of the cluster's services.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      // Deleted sandboxes die at once (the driver deletes with grace 0; this covers other deleters).
      terminationGracePeriodSeconds: 1,
      activeDeadlineSeconds: p.activeDeadlineSeconds,
      ...(p.runtimeClassName ? { runtimeClassName: p.runtimeClassName } : {}),
      ...(p.nodeSelector && Object.keys(p.nodeSelector).length ? { nodeSelector: p.nodeSelector } : {}),
      ...(p.tolerations?.length ? { tolerations: p.tolerations } : {}),
      securityContext: {
        seccompProfile: { type: 'RuntimeDefault' },
        // The one SysV IPC sysctl Kubernetes counts as safe: a segment goes with its last user.
        sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }],
      },
      initContainers: [
        {
          name: NETWORK_INIT_CONTAINER,
          image: p.networkInitImage,
          imagePullPolicy: p.imagePullPolicy,
          command: ['/bin/sh', '-c', NETWORK_INIT_SCRIPT],
          securityContext: {
            runAsUser: 0,
            runAsGroup: 0,
            runAsNonRoot: false,
            privileged: false,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
          resources: { limits: { cpu: '100m', memory: '16Mi' }, requests: { cpu: '10m', memory: '16Mi' } },
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
      containers: [
        {
          name: SANDBOX_CONTAINER,
          image: p.image,
          imagePullPolicy: p.imagePullPolicy,
          command: [
            '/bin/sh',
            '-c',
            BOOT_SCRIPT,
            'sandgym-boot',
            AGENT_STATE_DIR,
            AGENT_IO_DIR,
            p.workspace,
            String(p.limits.nofile),
            String(p.limits.pids),
            INIT_DIR,
            AGENT_SCRIPT,
          ],
          workingDir: '/',
          // The attach stream is the command channel; stdinOnce closes stdin when the server's attach
          // connection goes away (crash, SIGKILL), and the agent then ends the sandbox.
          stdin: true,
          stdinOnce: true,
          tty: false,
          env: Object.entries({
            PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
            HOME: '/tmp',
            LANG: 'C.UTF-8',
            PYTHONDONTWRITEBYTECODE: '1',
          }).map(([name, value]) => ({ name, value })),
          resources: {
            limits: { cpu: milliCpu(p.limits.cpus), memory: `${memMi}Mi`, 'ephemeral-storage': `${p.ephemeralStorageMb}Mi` },
            requests: { cpu: milliCpu(p.limits.cpus * p.cpuRequestRatio), memory: `${memMi}Mi`, 'ephemeral-storage': `${p.ephemeralStorageMb}Mi` },
          },
          // The judge: uid 0 with only SETUID/SETGID (to drop each command to the agent uid) and KILL
          // (to kill agent processes); agent commands hold no capability (docs/SANDBOX.md, threat model).
          securityContext: {
            runAsUser: 0,
            runAsGroup: 0,
            runAsNonRoot: false,
            privileged: false,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { ...dropAll, add: ['SETUID', 'SETGID', 'KILL'] },
            seccompProfile: { type: 'RuntimeDefault' },
            procMount: 'Default',
          },
          volumeMounts: [
            { name: 'workspace', mountPath: p.workspace },
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'state', mountPath: AGENT_STATE_DIR },
            { name: 'io', mountPath: AGENT_IO_DIR },
            { name: 'init', mountPath: INIT_DIR },
          ],
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
      // Memory-backed, size-capped: Docker's tmpfs mounts. Their pages count against the container's
      // memory limit, which is why it includes everything the agent can write (podMemoryMb).
      volumes: [
        memVolume('workspace', p.limits.disk_mb),
        memVolume('tmp', p.tmpSizeMb),
        memVolume('state', p.limits.disk_mb + 64),
        memVolume('io', IO_DIR_MB),
        memVolume('init', 1),
      ],
    },
  };
}

/** A label value: at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends. */
export function labelValue(s: string): string {
  const v = s
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return v || 'unknown';
}
