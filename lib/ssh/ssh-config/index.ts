export { expandIncludePattern, includePath, loadSshConfig, MAX_INCLUDE_DEPTH, type SshConfigFile, type SshConfigFiles } from "./load";
export { SshConfigError } from "./parse";
export { resolveSshAlias, type SshConfig, type SshConfigEntry } from "./resolve";
