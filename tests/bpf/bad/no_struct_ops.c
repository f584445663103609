/* Valid BPF programs, but no tcp_congestion_ops value in a .struct_ops section: there is
 * nothing to register, so a loader must say so rather than run anything. */
#include <ccbench/tcp_ca.h>

char _license[] SEC("license") = "GPL";

SEC("struct_ops")
__u32 BPF_PROG(lonely_ssthresh, struct sock *sk)
{
	__u32 half = tcp_sk(sk)->snd_cwnd / 2;

	return half > 2 ? half : 2;
}

SEC("struct_ops")
void BPF_PROG(lonely_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_sk(sk)->snd_cwnd += 1;
}
