import {
  isJsonObject,
  manifestLister,
  readJsonManifest,
  type ManifestEntry,
  type ManifestReading,
  type UnreadableEntry,
} from '../application-manifests.js';
import { nuget } from './version.js';

/**
 * Lists the NuGet packages of the .NET applications in a layer, from each application's
 * `<app>.deps.json`: the dependency manifest the SDK writes beside the application's assembly at
 * build and publish time, from which the host (hostpolicy) resolves the assemblies it loads, so its
 * packages are the ones the application runs with.
 *
 * Its `libraries` object is keyed `Name/Version` (`Newtonsoft.Json/13.0.1`), each with a `type`.
 * Only `package` libraries are NuGet packages. The others are not: `project` is the application
 * itself or a project of its solution (code of the image's own), `reference` an assembly referenced
 * by path, `referenceassembly` a framework reference assembly, and `runtimepack` the .NET runtime a
 * self-contained application carries (`runtimepack.Microsoft.NETCore.App.Runtime.linux-x64`), which
 * is no registry package by that name. Names are matched lower-cased, as NuGet compares package ids
 * case-insensitively; versions are kept as written when NuGet's parser accepts them.
 */

const DEPS_JSON = '.deps.json';
const PACKAGE = 'package';

function wants(path: string): boolean {
  if (!path.endsWith(DEPS_JSON)) return false;
  const base = path.slice(path.lastIndexOf('/') + 1);
  return base.length > DEPS_JSON.length;
}

function readDeps(root: unknown): ManifestReading {
  if (!isJsonObject(root)) return { why: 'not a JSON object' };
  if (!isJsonObject(root.libraries)) return { why: 'no libraries object' };
  const entries: (ManifestEntry | UnreadableEntry)[] = [];
  for (const [key, library] of Object.entries(root.libraries)) {
    if (!isJsonObject(library)) {
      entries.push({ why: `libraries[${JSON.stringify(key)}]: not a JSON object` });
      continue;
    }
    if (library.type !== PACKAGE) continue;
    const slash = key.indexOf('/');
    if (slash <= 0) {
      entries.push({ why: `libraries[${JSON.stringify(key)}]: not Name/Version` });
      continue;
    }
    entries.push({ name: key.slice(0, slash), version: key.slice(slash + 1) });
  }
  return { entries };
}

export const dotnetDepsLister = manifestLister({
  name: 'dotnet-deps',
  version: 1,
  ecosystem: 'nuget',
  format: nuget,
  wants,
  read: (content) => readJsonManifest(content, readDeps),
});
