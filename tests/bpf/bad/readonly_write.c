/* Writes srtt_us, which net/ipv4/bpf_tcp_ca.c does not let a congestion control write (it
 * allows snd_cwnd, snd_cwnd_cnt, snd_ssthresh, ecn_flags and a few more): a loader must
 * refuse the object. */
#include <ccbench/tcp_ca.h>

char _license[] SEC("license") = "GPL";

SEC("struct_ops")
__u32 BPF_PROG(bad_ssthresh, struct sock *sk)
{
	return 2;
}

SEC("struct_ops")
void BPF_PROG(bad_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_sk(sk)->srtt_us = 8000;
}

SEC("struct_ops")
__u32 BPF_PROG(bad_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops bad_write = {
	.ssthresh = (void *)bad_ssthresh,
	.cong_avoid = (void *)bad_cong_avoid,
	.undo_cwnd = (void *)bad_undo_cwnd,
	.name = "ccb_bad_write",
};
