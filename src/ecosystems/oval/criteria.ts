/**
 * Reading a definition's criteria tree the way Clair did: the tree stands
 * for a set of alternatives (AND = cartesian product of its children's alternatives, OR = their
 * union), and a package criterion holds only together with the other criteria of its alternative,
 * e.g. "Oracle Linux 8 is installed" or "Module idm:DL1 is enabled".
 *
 * Expanding the alternatives outright multiplies package criteria by each other; only the few
 * criteria that qualify a package (a "fact": an OS major, a module stream) matter here. So each
 * subtree is summarised by the distinct sets of facts its alternatives carry, and each package
 * criterion is reported with the fact sets it can occur with. That is exactly the information
 * the full expansion gives, in time linear in the tree (fact sets are few and deduplicated).
 */
import type { OvalCriteria, OvalCriterion, OvalNode } from './reader.js';

/** A criterion with every distinct set of facts that holds in an alternative containing it. */
export interface ReachedCriterion {
  readonly criterion: OvalCriterion;
  /** Each entry is one alternative's facts, sorted; [] when that alternative has none. */
  readonly contexts: readonly (readonly string[])[];
}

export interface CriteriaReading {
  /** The fact a criterion states (e.g. "major:8", "module"), or undefined when it states none. */
  readonly fact: (criterion: OvalCriterion) => string | undefined;
  /** Whether a criterion is one the caller collects (e.g. "<pkg> is earlier than <evr>"). */
  readonly wanted: (criterion: OvalCriterion) => boolean;
}

/** Beyond this many distinct fact sets below one node the definition is refused. */
const MAX_FACT_SETS = 4096;

/**
 * Every wanted criterion of the tree with its contexts. Negated criteria and everything below a
 * negated `<criteria>` are never collected (a negated "is earlier than" means the opposite), and
 * a negated fact criterion states no fact.
 */
export function reachCriteria(root: OvalCriteria, reading: CriteriaReading): ReachedCriterion[] {
  const signatures = new Map<OvalNode, ReadonlySet<string>>();
  const signature = (node: OvalNode): ReadonlySet<string> => {
    const known = signatures.get(node);
    if (known) return known;
    let result: ReadonlySet<string>;
    if (node.negate || node.kind === 'extend_definition') {
      result = EMPTY;
    } else if (node.kind === 'criterion') {
      const fact = reading.fact(node);
      result = fact === undefined ? EMPTY : new Set([fact]);
    } else if (node.children.length === 0) {
      result = EMPTY;
    } else if (node.operator === 'AND') {
      result = node.children.reduce<ReadonlySet<string>>((acc, child) => product(acc, signature(child)), EMPTY);
    } else {
      // OR, ONE, XOR: each child is an alternative of its own.
      const union = new Set<string>();
      for (const child of node.children) for (const key of signature(child)) union.add(key);
      result = union;
    }
    if (result.size > MAX_FACT_SETS) throw new Error(`OVAL criteria too complex (more than ${MAX_FACT_SETS} fact sets)`);
    signatures.set(node, result);
    return result;
  };

  const reached: ReachedCriterion[] = [];
  const visit = (node: OvalNode, context: ReadonlySet<string>): void => {
    if (node.negate) return;
    if (node.kind === 'extend_definition') return;
    if (node.kind === 'criterion') {
      if (reading.wanted(node)) reached.push({ criterion: node, contexts: [...context].map(splitKey) });
      return;
    }
    if (node.operator !== 'AND') {
      for (const child of node.children) visit(child, context);
      return;
    }
    // A child of an AND holds together with one alternative of each sibling: its context is the
    // product of the siblings' signatures (prefix and suffix products keep this linear).
    const n = node.children.length;
    const suffix: ReadonlySet<string>[] = new Array<ReadonlySet<string>>(n + 1);
    suffix[n] = EMPTY;
    for (let i = n - 1; i >= 0; i--) suffix[i] = product(signature(node.children[i] as OvalNode), suffix[i + 1] as ReadonlySet<string>);
    let prefix: ReadonlySet<string> = context;
    for (let i = 0; i < n; i++) {
      const child = node.children[i] as OvalNode;
      visit(child, product(prefix, suffix[i + 1] as ReadonlySet<string>));
      prefix = product(prefix, signature(child));
    }
  };
  visit(root, EMPTY);
  return reached;
}

/** The single empty fact set: a neutral element for the product. */
const EMPTY: ReadonlySet<string> = new Set(['']);

const SEPARATOR = '\u0000';

function splitKey(key: string): string[] {
  return key === '' ? [] : key.split(SEPARATOR);
}

function product(a: ReadonlySet<string>, b: ReadonlySet<string>): ReadonlySet<string> {
  if (a === EMPTY) return b;
  if (b === EMPTY) return a;
  const out = new Set<string>();
  for (const x of a) {
    for (const y of b) {
      if (x === '') out.add(y);
      else if (y === '') out.add(x);
      else out.add([...new Set([...splitKey(x), ...splitKey(y)])].sort().join(SEPARATOR));
    }
  }
  if (out.size > MAX_FACT_SETS) throw new Error(`OVAL criteria too complex (more than ${MAX_FACT_SETS} fact sets)`);
  return out;
}
