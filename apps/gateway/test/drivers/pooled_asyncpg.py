# asyncpg through the gateway's pooled endpoint: its prepared statements (named, cached per
# connection) and an asyncpg pool, whose release resets each session. Prints one JSON line.
import asyncio, json, ssl, sys

import asyncpg


async def main(host, port, user, password, database, ca):
    context = ssl.create_default_context(cafile=ca)
    connect = dict(host=host, port=int(port), user=user, password=password, database=database, ssl=context)
    connections = [await asyncpg.connect(**connect) for _ in range(4)]
    names = []
    for round_ in range(5):
        answers = await asyncio.gather(*(conn.fetchval('select name from items where id = $1', i + round_ + 1) for i, conn in enumerate(connections)))
        names.append(answers)
    async with connections[0].transaction():
        inside = await connections[0].fetchval('select count(*) from items where id <= $1', 5)
    for conn in connections:
        await conn.close()
    pool = await asyncpg.create_pool(min_size=2, max_size=3, **connect)
    pooled = await asyncio.gather(*(pool.fetchval('select name from items where id = $1', i) for i in range(1, 7)))
    await pool.close()
    print(json.dumps({'names': names, 'inside': inside, 'pool': pooled}))


asyncio.run(main(*sys.argv[1:]))
