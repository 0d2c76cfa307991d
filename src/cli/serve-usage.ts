/** `spamrule serve --help`: every flag, by group (the config file's keys are in docs/deployment.md). */
import { availableParallelism } from 'node:os';

export const SERVE_USAGE = `usage: spamrule serve [--config FILE] [listeners] [rules] [options]

Listeners (each optional; at least one):
  --rspamd HOST:PORT    rspamd HTTP protocol (POST /checkv2, /ping; also /metrics, /healthz)
  --milter HOST:PORT    milter protocol v6 (Postfix smtpd_milters, Sendmail); or unix:PATH
  --spamd HOST:PORT     spamd protocol (SPAMC/1.5, spamc)
  --metrics HOST:PORT   a separate HTTP listener for /metrics and /healthz
  --listen HOST:PORT    JMAP management API (with --db; default 127.0.0.1:8080; port 0 = random)

Rules:
  --db PATH             the managed registry (SQLite; tokens, and rules unless --pg); serves JMAP
  --pg URL              keep SpamRules/StoreLookups in PostgreSQL (a password left out of the URL comes from
                        PGPASSWORD or ~/.pgpass, out of sight of ps; or put pg in the config file)
  --capability URN      management capability URN (default urn:stalwart:jmap)
  --secret-file-dir DIR      a directory whose files StoreLookups written over JMAP may use as File secrets
                        (repeatable; default none: refused)
  --secret-env-prefix PREFIX  the same for EnvironmentVariable secrets: names starting with PREFIX
  --sqlite-store-dir DIR     where Sqlite StoreLookups written over JMAP may keep their files (default: the
                        directory of --db; never the registry or --model file)
  --store-allow-host HOST    a host StoreLookups written over JMAP may connect to (repeatable): *, an address or
                        CIDR range, a name (listed by name: a range admits no names), *.example.net, or a socket
                        path; default *: any host but link-local and cloud metadata addresses (169.254.0.0/16,
                        fe80::/10, fd00:ec2::254), which only an entry inside their range opens
  --rules FILE          SpamRule JSON (repeatable); default the built-in rule set (no --db)
  --scores FILE         scores.txt or SpamTag JSON (repeatable)
  --list NS=FILE        a static lookup list (repeatable)
  --score-spam N  --score-reject N  --score-discard N
  --dns SPEC            off (default) | system | system:SERVER | static:FILE.json
  --time-budget MS      per-message time budget of the analysis and rules (default 5000; 0 = none)
  --rule-wait MS        per-message budget of the rules' waits for stores and DNS (default 2000; 0 = none)
  --regex-work-limit STEPS  most steps one matches() search may take (default 67108864 = 2^26, about a
                        second at worst; 1 to 2^36): over it the rule fails with a RegexWorkError
  --regex-cache SIZE    each worker thread's budget for the DFA caches of compiled patterns (default 64M;
                        1M to 16G); /metrics: spamrule_regex_cache_*
  --no-module NAME      switch a built-in analysis module off (repeatable); --no-analysis: rules only
  --trust-authserv ID   read authentication results from this authserv-id's Authentication-Results
  --follow-redirects    follow the HTTP redirects of url-redirectors URLs (3 hops of 5 s; needs --dns system;
                        public addresses on ports 80 and 443 only; the config file's analysis.followRedirects
                        sets maxHops, timeoutMs, allowedNetworks and ports); analysis.dnsblLimits, .allowedIps
                        and .blockedIps are set in the config file (docs/deployment.md)
  --pyzor HOST[:PORT]   check each message's Pyzor digest with this server over UDP (port 24441 by default;
                        the config file's analysis.pyzor also takes timeoutMs, blockCount, allowCount, ratio,
                        digest, and breaker, the circuit breaker that skips a server failing 3 times in a row)
  --pyzor-timeout MS    how long to wait for the Pyzor server's answer (default 5000)
  --pyzor-digest stalwart|pyzor  the digest sent: Stalwart's (default; what Stalwart servers send) or pyzor
                        1.0.0's (what pyzor clients report: use it with public.pyzor.org)
  --llm-url URL         ask this OpenAI-compatible chat endpoint to classify each message (LLM_* tags, X-Spam-LLM;
                        needs --llm-model; the config file's analysis.llm takes Stalwart's SpamLlm and AiModel
                        fields: prompt, categories, confidence, separator, positions, httpAuth, httpHeaders, …)
  --llm-model NAME      the model name sent
  --llm-timeout MS      how long to wait for its reply (default 10000)
  --llm-prompt-file FILE  the instructions sent before the message (default: a built-in prompt)
  --llm-api-key-env NAME | --llm-api-key-file FILE  the API key (Authorization: Bearer) from this variable or file
  --cache-dir DIR       on-disk cache of remote (HttpLookup) lists ("spamrule lists update" fills it)
  --no-refresh-lists    serve remote lists from the cache only (default: refresh stale ones in the background)
  --list-allow-network CIDR  remote list downloads may connect to this address or range although it is not
                        public (an internal list server; repeatable; default: public addresses only)
  --allow-tell          with --model and --spamd: spamc -L spam|ham adds samples, -L forget removes them
                        (as spamd --allow-tell)
  --allow-learn         with --model and --rspamd: rspamc learn_spam|learn_ham (POST /learnspam, /learnham on
                        the rspamd listener) adds samples; off by default, 403 without it (rspamd learns on
                        its password-protected controller; here anyone reaching the port could train)
  --model FILE|URL      the statistical classifier of "spamrule learn --model FILE" (PROB_* tags; a new model is
                        picked up within 30 s), or one kept in PostgreSQL (postgres://USER:PASSWORD@HOST/DB; a
                        password left out comes from PGPASSWORD) or Redis (redis://HOST:PORT), shared by servers
                        on several hosts; with --db, JMAP x:SpamTrainingSample objects add samples to it;
                        limits.maxLearnSize (1M) and limits.learnPerMinute (60) cap what --allow-learn and
                        --allow-tell take

Workers and limits:
  --workers N           worker threads (default: CPU cores, here ${availableParallelism()})
  --max-size SIZE       largest message scanned (default 50M); larger ones are passed unscanned
  --max-buffered SIZE   request bytes all listeners may hold in memory at once (default 4 × max-size, at
                        least 64M, at most a quarter of the memory; at least max-size); past it, requests
                        get a temporary failure (rspamd 503, spamd 75, milter tempfail)
  --scan-timeout MS     per-message time limit (default 30000; 0 = none)
  --max-scans N         scans handed to the workers at once (default 4 per worker)
  --idle-timeout MS     close spamd and rspamd connections idle this long (default 60000)
  --milter-idle-timeout MS  the same for milter connections (default 7210000, libmilter's: the MTA keeps
                        its connection for a whole SMTP session, quiet while a slow client sends)
  --head-timeout MS     a request head (or milter packet, or the milter negotiation from the connect) must
                        arrive within this (default 30000; 0 = none)
  --request-timeout MS  a whole spamd/rspamd request must arrive within this (default 300000; 0 = none)
  --milter-message-timeout MS  a milter message's content must arrive within this of its first header
                        (default 600000; 0 = none); else the message is dropped and the connection closed
  --milter-busy-action tempfail|accept  a milter message that finds every scan slot and the waiting room
                        full: tempfail (default; the MTA answers 4xx, the sender retries) or accept (passed
                        on unscanned with X-Spam-Note: whoever floods the filter gets mail through)
  --milter-error-action accept|tempfail  a milter message whose scan timed out (--scan-timeout) or failed
                        (worker failure, other error): accept (default; passed on unscanned with
                        X-Spam-Note: a message built to be slow to scan gets through) or tempfail (the MTA
                        answers 4xx; one that always times out is retried until the sender's queue
                        lifetime bounces it). A message over --max-size always passes with the note
  --shutdown-grace MS   on SIGTERM, the requests already begun may finish within this (default 30000)
  --log-level LEVEL     trace|debug|info|warn|error|silent (default info); JSON lines on stdout, the
                        worker threads' too; at info, one "listening" line per listener
                        ({"listener":"rspamd","address":…}) and a "ready" line once all listen

  --config FILE         JSON or TOML file with the settings above (docs/deployment.md)

Create a token for the JMAP API first: spamrule token create --db PATH --permissions all`;
