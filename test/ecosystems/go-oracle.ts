import type { BuildInfo, BuildModule } from '../../src/ecosystems/go/buildinfo.js';

/**
 * What `go version -m` prints of a binary (with the `<file>: ` prefix of its first line cut), read
 * back into the build information it printed: the first line is the toolchain version; then, each
 * indented by a tab, runtime/debug's BuildInfo.String() lines (`mod`, `dep`, `=>` after the module
 * it replaces, `path` and `build`), fields tab-separated.
 */
export function parseGoVersionM(output: string): BuildInfo {
  const [first, ...lines] = output.split('\n');
  let main: BuildModule | undefined;
  const deps: BuildModule[] = [];
  for (const line of lines) {
    const [word, path = '', version = ''] = line.replace(/^\t/, '').split('\t');
    if (word === 'mod') main = { path, version };
    else if (word === 'dep') deps.push({ path, version });
    else if (word === '=>') {
      const replaced = deps.pop() as BuildModule;
      deps.push({ ...replaced, replace: { path, version } });
    }
  }
  return { goVersion: first as string, ...(main === undefined ? {} : { main }), deps };
}

/**
 * The name@version pairs the lister should report for what go printed, by the lister's rules
 * written out again here: stdlib at the toolchain's release, the main module unless `(devel)`, each
 * dependency or its replacement, a replacement without a version (a local directory: empty, or
 * `(devel)` as Go 1.19 prints a vendored one) left out.
 */
export function expectedPackages(info: BuildInfo): Set<string> {
  const expected = new Set<string>();
  const goVersion = info.goVersion.split(' ')[0] as string;
  if (/^go\d+\.\d+(\.\d+)?((alpha|beta|rc)\d+)?$/.test(goVersion)) expected.add(`stdlib@${goVersion}`);
  if (info.main !== undefined && info.main.version !== '(devel)') expected.add(`${info.main.path}@${info.main.version}`);
  for (const dep of info.deps) {
    const module = dep.replace ?? dep;
    if (module.version !== '' && module.version !== '(devel)') expected.add(`${module.path}@${module.version}`);
  }
  return expected;
}
