import { describe, expect, test } from 'bun:test'
import { defaultConfig } from './Config.ts'
import { toTaskView } from './TaskView.ts'
import { samplePayment, sampleTask } from './testing/fixtures.ts'

const config = defaultConfig('http://localhost:3000')
const wallet = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
const self = (id: string) => `http://localhost:3000/api/agents/sample-agent/tasks/${id}`

describe('toTaskView', () => {
  test('behavior: the wire fields keep their order, the result fields last and only when shown', () => {
    const pending = toTaskView(sampleTask(), config)
    expect(Object.keys(pending)).toEqual([
      'task_id',
      'agent',
      'status',
      'skill',
      'skill_slug',
      'sla',
      'params',
      'buyer',
      'buyer_wallet',
      'payment',
      'next_steps',
      'created_at',
      'expires_at',
      'paid_at',
      'completed_at',
      'sla_seconds',
      'due_at',
      'delivered_at',
      'review_seconds',
      'reveal',
      'review_until',
      'outcome',
      'records',
      'review',
      'money',
      'rating',
      'rate',
      'escrow_job',
    ])
    expect(Object.keys(pending.payment).slice(0, 6)).toEqual([
      'amount',
      'currency',
      'chain',
      'chain_id',
      'usdc_contract',
      'to',
    ])
    const delivered = sampleTask({
      status: 'delivered',
      reveal: 'after_acceptance',
      resultUrl: 'https://r.example/1',
    })
    expect(Object.keys(toTaskView(delivered, config)).at(-1)).toBe('result_commitment')
  })

  test('behavior: next steps name the task URL, verify-payment while unpaid and accept or reject once delivered', () => {
    const pending = sampleTask()
    expect(toTaskView(pending, config).next_steps.verify).toBe(`POST ${self(pending.id)}/verify-payment`)
    expect(toTaskView(pending, config).next_steps.check_status).toStartWith(`GET ${self(pending.id)} until`)
    const delivered = sampleTask({
      status: 'delivered',
      payment: samplePayment(1),
      buyerWallet: wallet,
      deliveredAt: new Date('2026-06-01T12:01:00Z'),
      reviewSeconds: 600,
    })
    const { check_status } = toTaskView(delivered, config).next_steps
    expect(check_status).toContain(
      `POST ${self(delivered.id)}/accept or ${self(delivered.id)}/reject (with a reason)`,
    )
  })
})
