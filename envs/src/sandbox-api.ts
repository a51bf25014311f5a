// The sandbox surface an env sees. Declared once in sandbox-contract/ (shared with the drivers, which
// implement it); re-exported here so the env API is one import. Envs never import driver code and can
// be tested against a fake provider.
export type {
  BinaryExecResult,
  DriverChoice,
  ExecRequest,
  ExecResult,
  FileEntry,
  OpenSandboxProvider,
  OpenSandboxProviderOptions,
  Sandbox,
  SandboxLimitName,
  SandboxLimits,
  SandboxProvider,
  SandboxProviderHandle,
  SandboxRequirement,
} from '#sandbox-contract/index.js';
