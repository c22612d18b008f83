import { expect } from 'vitest';

/**
 * Reading server-rendered HTML in tests without a browser: text as a reader sees it, and the
 * elements the pages mark with data-testid.
 */

/** Text of an HTML fragment: tags dropped, entities of the html template decoded, space collapsed. */
export const text = (fragment: string): string =>
  fragment
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();

/** The texts of the elements with this data-testid (elements that do not nest their own tag). */
export function byTestId(page: string, id: string): string[] {
  const found: string[] = [];
  const re = new RegExp(`<(\\w+)[^>]*\\sdata-testid="${id}"[^>]*>`, 'g');
  for (let m = re.exec(page); m; m = re.exec(page)) {
    const rest = page.slice(m.index + m[0].length);
    found.push(text(rest.slice(0, rest.search(new RegExp(`</${m[1]}\\s*>`)))));
  }
  return found;
}

/** The number in the one element with this data-testid; undefined when there is none. */
export function numberAt(page: string, id: string): number | undefined {
  const values = byTestId(page, id);
  expect(values.length, id).toBeLessThanOrEqual(1);
  return values.length === 0 ? undefined : Number(values[0]!.replace(/,/g, ''));
}

export interface MarkedElement {
  /** The opening tag's attributes, entities decoded. */
  attributes: Record<string, string>;
  html: string;
}

const attributesOf = (tag: string): Record<string, string> =>
  Object.fromEntries([...tag.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, text(a[2]!)]));

/** The elements of this tag with this data-testid (not nesting their own tag), with their opening tag's attributes. */
export function elements(page: string, tag: string, id: string): MarkedElement[] {
  const found: MarkedElement[] = [];
  const re = new RegExp(`<${tag}([^>]*\\sdata-testid="${id}"[^>]*)>([\\s\\S]*?)</${tag}\\s*>`, 'g');
  for (let m = re.exec(page); m; m = re.exec(page)) found.push({ attributes: attributesOf(m[1]!), html: m[2]! });
  return found;
}
