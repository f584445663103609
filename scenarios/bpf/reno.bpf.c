/*
 * Reno as a BPF struct_ops congestion control: slow start, then one packet more per
 * window of ACKs, and a multiplicative decrease on loss. It follows the kernel's
 * tcp_reno_cong_avoid, tcp_slow_start, tcp_cong_avoid_ai, tcp_reno_ssthresh and
 * tcp_reno_undo_cwnd (net/ipv4/tcp_cong.c), written out here instead of called as kfuncs.
 *
 *   ccbench run --cca bpf:scenarios/bpf/reno.bpf.c --rate 20Mbit --rtt 30ms --duration 10s
 */
#include <ccbench/tcp_ca.h>

/* The kernel takes kfuncs and GPL-only helpers only from programs that declare a
 * GPL-compatible licence. */
char _license[] SEC("license") = "GPL";

/* A parameter: a flow's params set it by name, the loader rewriting .rodata before it
 * loads the object. 50 is Reno's halving. */
volatile const __u32 beta_percent = 50;

/* Private state, kept in the socket's icsk_ca_priv. */
struct reno {
	__u32 reductions; /* how many times ssthresh cut the window */
};

SEC("struct_ops")
void BPF_PROG(reno_init, struct sock *sk)
{
	struct reno *ca = inet_csk_ca(sk);

	ca->reductions = 0;
}

/* tcp_slow_start: grow by what was ACKed, up to ssthresh; return what is left over. */
static __u32 slow_start(struct tcp_sock *tp, __u32 acked)
{
	__u32 cwnd = tp->snd_cwnd + acked;

	if (cwnd > tp->snd_ssthresh)
		cwnd = tp->snd_ssthresh;
	acked -= cwnd - tp->snd_cwnd;
	tp->snd_cwnd = cwnd < tp->snd_cwnd_clamp ? cwnd : tp->snd_cwnd_clamp;
	return acked;
}

/* tcp_cong_avoid_ai: one packet more for every w packets ACKed. */
static void cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked)
{
	/* Credit counted at a larger w is applied gently now. */
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd += 1;
	}
	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		__u32 delta = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= delta * w;
		tp->snd_cwnd += delta;
	}
	if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;
}

SEC("struct_ops")
void BPF_PROG(reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	/* An application-limited sender has not tested the window it has. */
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = slow_start(tp, acked);
		if (!acked)
			return;
	}
	cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(reno_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct reno *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd * beta_percent / 100;

	ca->reductions += 1;
	return cwnd > 2 ? cwnd : 2; /* never below two packets */
}

/* After a spurious loss signal, back to the window before the cut. */
SEC("struct_ops")
__u32 BPF_PROG(reno_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops reno = {
	.init = (void *)reno_init,
	.ssthresh = (void *)reno_ssthresh,
	.cong_avoid = (void *)reno_cong_avoid,
	.undo_cwnd = (void *)reno_undo_cwnd,
	.name = "bpf_reno",
};
