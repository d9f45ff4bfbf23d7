const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/**
 * Python's `datetime.strftime` in the C locale, in local time: what transformers' `strftime_now` gives
 * chat templates (Llama 3.1+ writes "Today Date: 26 Jul 2024" with `%d %b %Y`). Supports `%a %A %b %B %d
 * %e %H %I %j %m %M %p %S %y %Y %%` and glibc's `-` flag (no padding, `%-d`); other directives pass through.
 */
export function strftime(date: Date, format: string): string {
  return format.replace(/%(-?)([a-zA-Z%])/g, (directive, noPad: string, code: string) => {
    const pad = (value: number, width = 2) => (noPad ? String(value) : String(value).padStart(width, '0'));
    switch (code) {
      case 'a':
        return DAYS[date.getDay()].slice(0, 3);
      case 'A':
        return DAYS[date.getDay()];
      case 'b':
        return MONTHS[date.getMonth()].slice(0, 3);
      case 'B':
        return MONTHS[date.getMonth()];
      case 'd':
        return pad(date.getDate());
      case 'e':
        return noPad ? String(date.getDate()) : String(date.getDate()).padStart(2, ' ');
      case 'H':
        return pad(date.getHours());
      case 'I':
        return pad(((date.getHours() + 11) % 12) + 1);
      case 'j':
        return pad(dayOfYear(date), 3);
      case 'm':
        return pad(date.getMonth() + 1);
      case 'M':
        return pad(date.getMinutes());
      case 'p':
        return date.getHours() < 12 ? 'AM' : 'PM';
      case 'S':
        return pad(date.getSeconds());
      case 'y':
        return pad(date.getFullYear() % 100);
      case 'Y':
        return String(date.getFullYear());
      case '%':
        return '%';
      default:
        return directive;
    }
  });
}

function dayOfYear(date: Date): number {
  const start = new Date(date.getFullYear(), 0, 1);
  const today = new Date(date.getFullYear(), date.getMonth(), date.getDate());
  return Math.round((today.getTime() - start.getTime()) / 86_400_000) + 1;
}
