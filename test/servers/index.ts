/**
 * Throwaway database servers for tests and benchmarks: loopback only, random free ports, temp data dirs
 * removed by `stop()`. Start each once per test file (in `beforeAll`), stop it in `afterAll`.
 */
export { startPostgres, type PostgresServer } from './postgres.js';
export { startMariaDb, type MariaDbServer } from './mariadb.js';
export { startRedis, startRedisCluster, startRedisSentinel, redisCli, type RedisServer, type RedisClusterServer, type RedisSentinelServer } from './redis.js';
export { freePort, waitFor } from './common.js';
export { startPyzord, runPyzor, freeUdpPort, type PyzorServer } from './pyzord.js';
export { startLlmServer, useLlmServer, completionBody, type LlmServer, type LlmRequest, type LlmReply } from './llm.js';
export { startRedisTlsCluster, startRedisTlsSentinel, redisTlsCli, type RedisTlsCluster, type RedisTlsSentinel } from './redis-tls.js';
export { makeTestCa, type TestCa, type TestCert } from './tls.js';
