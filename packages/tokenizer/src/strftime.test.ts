import { describe, expect, it } from 'vitest';
import { strftime } from './strftime.js';

describe('strftime', () => {
  it('formats like Python in the C locale', () => {
    const date = new Date(2025, 0, 5, 15, 4, 9);
    expect(strftime(date, '%d %b %Y')).toBe('05 Jan 2025');
    expect(strftime(date, '%a %A %B %m/%y %I%p %-d %e %j')).toBe('Sun Sunday January 01/25 03PM 5  5 005');
    expect(strftime(date, '100%% %Q')).toBe('100% %Q');
  });
});
