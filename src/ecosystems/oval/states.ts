/**
 * What an rpminfo state says beside the version: the package architectures a test applies to. Red
 * Hat writes them as a pattern of alternatives (`aarch64|ppc64le|s390x|x86_64`), SUSE the same in
 * parentheses; an installed package of another architecture does not satisfy the test (OVAL's
 * `pattern match` is a regular expression search on the package's arch).
 */
import type { OvalState, OvalTables } from './reader.js';

/** An architecture name as rpm writes one: x86_64, i686, noarch, ppc64le. */
const ARCH_NAME = /^[A-Za-z0-9_]+$/;

/**
 * The architectures a state's `<arch>` names: the alternatives of a `pattern match` (optionally
 * anchored or in one group), the value of an `equals`. Undefined (every architecture) for a state
 * without one, and for any pattern that is more than a list of names, which is then not narrowed:
 * an unread condition must not hide a vulnerability.
 */
export function stateArches(arch: OvalState['arch']): string[] | undefined {
  if (arch === null) return undefined;
  if (arch.operation === 'equals') return ARCH_NAME.test(arch.value) ? [arch.value] : undefined;
  if (arch.operation !== 'pattern match') return undefined;
  const body = /^\^?\(?([^()^$]*)\)?\$?$/.exec(arch.value)?.[1];
  if (body === undefined) return undefined;
  const names = body.split('|');
  return names.every((name) => ARCH_NAME.test(name)) ? [...new Set(names)].sort() : undefined;
}

/** The architectures the first of a test's states with an `<arch>` names; undefined when none does, or the test is unknown. */
export function testArches(tables: OvalTables, testRef: string): string[] | undefined {
  for (const ref of tables.tests.get(testRef)?.stateRefs ?? []) {
    const arch = tables.states.get(ref)?.arch ?? null;
    if (arch !== null) return stateArches(arch);
  }
  return undefined;
}
