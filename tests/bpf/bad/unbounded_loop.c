/* Spins while snd_cwnd is not zero, and nothing in the loop changes it: the loop may never
 * end, so a verifier must refuse it. The reads are volatile so that clang keeps the loop
 * (a backward jump in cong_avoid). */
#include <ccbench/tcp_ca.h>

char _license[] SEC("license") = "GPL";

volatile __u32 spins;

SEC("struct_ops")
__u32 BPF_PROG(bad_ssthresh, struct sock *sk)
{
	return 2;
}

SEC("struct_ops")
void BPF_PROG(bad_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	while (*(volatile __u32 *)&tp->snd_cwnd != 0)
		spins++;
}

SEC("struct_ops")
__u32 BPF_PROG(bad_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops bad_loop = {
	.ssthresh = (void *)bad_ssthresh,
	.cong_avoid = (void *)bad_cong_avoid,
	.undo_cwnd = (void *)bad_undo_cwnd,
	.name = "ccb_bad_loop",
};
