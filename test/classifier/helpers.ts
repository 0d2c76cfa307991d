/** Small labelled mail for classifier tests: spam and ham with distinct vocabularies, varied per index. */
const SPAM_WORDS = ['cheap', 'pills', 'viagra', 'winner', 'lottery', 'casino', 'bonus', 'unclaimed', 'prize', 'discount', 'pharmacy', 'replica', 'watches', 'bitcoin', 'investment'];
const HAM_WORDS = ['meeting', 'agenda', 'project', 'report', 'minutes', 'schedule', 'review', 'budget', 'quarterly', 'deadline', 'colleague', 'presentation', 'draft', 'feedback', 'roadmap'];

function pick(words: string[], i: number, n: number): string {
  const out: string[] = [];
  for (let k = 0; k < n; k++) out.push(words[(i * 7 + k * 3) % words.length]!);
  return out.join(' ');
}

export function spamMessage(i: number): string {
  return [
    `From: promo${i}@deals-${i % 3}.example`, 'To: user@example.org', `Subject: ${pick(SPAM_WORDS, i, 3)} now`,
    `Message-ID: <s${i}@deals.example>`, '', `Dear friend, ${pick(SPAM_WORDS, i, 12)}.`, `Click http://deals-${i % 3}.example/offer${i}.html today!`, '',
  ].join('\r\n');
}

export function hamMessage(i: number): string {
  return [
    `From: alice${i}@corp.example`, 'To: bob@corp.example', `Subject: ${pick(HAM_WORDS, i, 3)}`,
    `Message-ID: <h${i}@corp.example>`, '', `Hi Bob, ${pick(HAM_WORDS, i, 12)}.`, 'Regards, Alice', '',
  ].join('\r\n');
}
