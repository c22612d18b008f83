import { manifestLister, type ManifestReading } from '../application-manifests.js';
import { gem } from './version.js';

/**
 * Lists the Ruby gems installed in a layer, from the specifications RubyGems keeps of them: each
 * installed gem has `<name>-<version>[-<platform>].gemspec` in the `specifications/` directory of
 * its installation (`usr/local/bundle/specifications/`, `usr/lib/ruby/gems/3.1.0/specifications/`,
 * `var/lib/gems/3.1.0/specifications/`, Debian's `usr/share/rubygems-integration/all/specifications/`),
 * and the gems shipped with Ruby itself in its `specifications/default/`. That directory is where
 * RubyGems looks (Gem::Specification.dirs), so a gemspec elsewhere (a gem's own source tree) is not
 * an installed gem and is not read.
 *
 * A gemspec there is Ruby code RubyGems wrote (Gem::Specification#to_ruby), which is not run here:
 * its `name` and `version` are read from the assignments to_ruby writes, `s.name = "rack".freeze`
 * and `s.version = "2.2.3"` (older RubyGems wrote `%q{rack}`; the block variable may be named
 * otherwise). Where they are not literal strings, the `# stub: <name> <version> <platform> ...`
 * line to_ruby writes at the top is read instead, as RubyGems itself reads it for its stub
 * specifications without loading the file. The assignments come first because they are what
 * loading the file yields, and a copied or edited file may carry a stale stub line. The file name
 * is not used: with a platform (`nokogiri-1.13.10-x86_64-linux`) it cannot be split into name and
 * version without knowing one of them.
 */

const EXTENSION = '.gemspec';
const SPECIFICATIONS = 'specifications';
const DEFAULT = 'default';

function wants(path: string): boolean {
  if (!path.endsWith(EXTENSION)) return false;
  const segments = path.split('/');
  const n = segments.length;
  if ((segments[n - 1] as string).length === EXTENSION.length) return false;
  return segments[n - 2] === SPECIFICATIONS || (segments[n - 2] === DEFAULT && segments[n - 3] === SPECIFICATIONS);
}

/** `%q` and `%Q` strings' closing delimiters, by opening one. */
const PERCENT_CLOSE: Readonly<Record<string, string>> = { '{': '}', '(': ')', '[': ']', '<': '>' };

/**
 * The value of a Ruby string literal as to_ruby writes one (`"x"`, `'x'`, `%q{x}`, `%Q(x)`, `%{x}`),
 * optionally `.freeze`d, making up the whole of text; undefined for anything else (an expression,
 * a string with interpolation or escapes, which a name or version does not need).
 */
function rubyString(text: string): string | undefined {
  const literal = text.replace(/\.freeze$/, '');
  let body: string | undefined;
  const quote = literal[0];
  if ((quote === '"' || quote === "'") && literal.endsWith(quote) && literal.length >= 2) {
    body = literal.slice(1, -1);
  } else {
    const percent = /^%[qQ]?([{([<])/.exec(literal);
    const close = percent === null ? undefined : PERCENT_CLOSE[percent[1] as string];
    if (percent !== null && close !== undefined && literal.endsWith(close)) body = literal.slice(percent[0].length, -1);
  }
  if (body === undefined || /["'\\#{}()[\]<>]/.test(body)) return undefined;
  return body;
}

/** The value of the first `<var>.<field> = <value>` line, when it is a literal string. */
function assigned(text: string, field: 'name' | 'version'): string | undefined {
  const line = new RegExp(`^[ \\t]*[a-z_][a-zA-Z0-9_]*\\.${field}[ \\t]*=[ \\t]*(.*?)[ \\t]*$`, 'm').exec(text);
  return line === null ? undefined : rubyString(line[1] as string);
}

/** `# stub: <name> <version> <platform> <require paths>`: RubyGems' StubSpecification line. */
const STUB = /^# stub: (\S+) (\S+) /m;

function readGemspec(content: Buffer): ManifestReading {
  const text = content.toString('utf8');
  const stub = STUB.exec(text);
  const name = assigned(text, 'name') ?? stub?.[1];
  const version = assigned(text, 'version') ?? stub?.[2];
  if (name === undefined) return { why: 'no literal name assignment and no stub line' };
  if (version === undefined) return { why: `${name}: no literal version assignment and no stub line` };
  return { entries: [{ name, version }] };
}

export const gemspecLister = manifestLister({
  name: 'gemspec',
  version: 1,
  ecosystem: 'rubygems',
  format: gem,
  wants,
  read: readGemspec,
});
