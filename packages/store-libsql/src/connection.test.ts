import { describe, expect, test } from 'bun:test'
import { connectionOver } from './connection.ts'
import { type Driver, openNative } from './drivers.ts'

const connect = async (driver: Driver) => {
  const connection = connectionOver(await openNative({ path: ':memory:', local: true }, undefined, driver))
  connection.exec('create table t (id integer primary key, note text not null)')
  return connection
}

for (const driver of ['bun', 'libsql'] as const) {
  describe(`connection (${driver})`, () => {
    test('behavior: statements are prepared once per SQL text and bind positional, named and null values', async () => {
      const connection = await connect(driver)
      connection.run('insert into t (id, note) values (?, ?)', [1, 'a'])
      connection.run('insert into t (id, note) values (:id, :note)', { id: 2, note: 'b' })
      expect(connection.all('select * from t where id = ? or note is ?', [2, null])).toEqual([
        { id: 2, note: 'b' },
      ])
      expect(connection.values('select id, note from t order by id')).toEqual([
        [1, 'a'],
        [2, 'b'],
      ])
      connection.close()
    })

    test('behavior: writes queued together commit together, each answered with its own result', async () => {
      const connection = await connect(driver)
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, id) =>
          connection.commitTogether(() =>
            connection.run('insert into t (id, note) values (?, ?)', [id, 'x']),
          ),
        ),
      )
      expect(results.map((result) => result.changes)).toEqual(Array(50).fill(1))
      expect(connection.values('select count(*) from t')[0]?.[0]).toBe(50)
      connection.close()
    })

    test('error: a failing write in a group undoes only its own statements and rejects only its own caller', async () => {
      const connection = await connect(driver)
      connection.run('insert into t (id, note) values (?, ?)', [7, 'taken'])
      const outcomes = await Promise.allSettled([
        connection.commitTogether(() => connection.run('insert into t (id, note) values (1, ?)', ['before'])),
        connection.commitTogether(() => {
          // Its first statement lands, then the second breaks the primary key: neither may stay.
          connection.run('insert into t (id, note) values (2, ?)', ['half'])
          connection.run('insert into t (id, note) values (7, ?)', ['duplicate'])
        }),
        connection.commitTogether(() => connection.run('insert into t (id, note) values (3, ?)', ['after'])),
      ])
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
      expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE|PRIMARY KEY/)
      expect(connection.values('select id, note from t order by id')).toEqual([
        [1, 'before'],
        [3, 'after'],
        [7, 'taken'],
      ])
      expect(connection.values('select 1')).toEqual([[1]])
      connection.close()
    })

    test('error: writes of one group that collide with each other: the first lands, the second alone is undone', async () => {
      const connection = await connect(driver)
      const outcomes = await Promise.allSettled([
        connection.commitTogether(() => connection.run('insert into t (id, note) values (5, ?)', ['first'])),
        connection.commitTogether(() => {
          connection.run('insert into t (id, note) values (6, ?)', ['half'])
          connection.run('insert into t (id, note) values (5, ?)', ['second'])
        }),
      ])
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected'])
      expect(connection.values('select id, note from t order by id')).toEqual([[5, 'first']])
      // A lone failing write is undone too, and the connection goes on.
      await expect(
        connection.commitTogether(() => {
          connection.run('insert into t (id, note) values (8, ?)', ['half'])
          connection.run('insert into t (id, note) values (5, ?)', ['again'])
        }),
      ).rejects.toThrow(/UNIQUE|PRIMARY KEY/)
      expect(connection.values('select id, note from t order by id')).toEqual([[5, 'first']])
      await connection.commitTogether(() =>
        connection.run('insert into t (id, note) values (9, ?)', ['later']),
      )
      expect(connection.values('select count(*) from t')).toEqual([[2]])
      connection.close()
    })

    test('error: asynchronous work is refused before it commits anything', async () => {
      const connection = await connect(driver)
      await expect(
        connection.writeTransaction(() => {
          connection.run('insert into t (id, note) values (1, ?)', ['x'])
          return Promise.resolve()
        }),
      ).rejects.toThrow(/synchronous/)
      expect(connection.values('select count(*) from t')[0]?.[0]).toBe(0)
      connection.close()
    })
  })
}
