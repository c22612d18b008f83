import type { Progress, ProgressEvent } from './backend.js';

/**
 * Progress for a person watching a terminal: one line per layer (already scanned, or its bytes as
 * they go, redrawn in place), and each step. Nothing at all when stderr is not a terminal (a CI
 * log would fill with redraws) or with --quiet.
 */

const short = (digest: string): string => digest.replace(/^sha256:/, '').slice(0, 12);

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function terminalProgress(stream: NodeJS.WriteStream, verb: 'sending' | 'reading'): Progress {
  let redrawing = false;
  const line = (text: string, redraw = false): void => {
    stream.write(`${redrawing ? '\r\x1b[K' : ''}${text}${redraw ? '' : '\n'}`);
    redrawing = redraw;
  };
  return (event: ProgressEvent) => {
    if (event.kind === 'step') return line(event.message);
    const layer = `layer ${event.index + 1}/${event.total} ${short(event.digest)}`;
    switch (event.kind) {
      case 'layer-known':
        return line(`${layer}: already scanned`);
      case 'layer-bytes':
        return line(`${layer}: ${verb} ${formatBytes(event.done)} of ${formatBytes(event.size)}`, true);
      case 'layer-scanned':
        return line(`${layer}: scanned`);
    }
  };
}

export const silentProgress: Progress = () => undefined;
